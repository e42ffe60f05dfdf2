#include "plan_fixture.h"

#include "plan/recommender.h"

#include <atomic>
#include <set>
#include <thread>

using namespace tb;
using plan::RejectReason;

namespace {

bool hasRejection(const plan::Recommendation& rec, const std::string& vm, RejectReason reason)
{
    for (const plan::RejectedOption& r : rec.rejected)
        if (r.vmSize == vm && r.reason == reason)
            return true;
    return false;
}

} // namespace

class TestRecommender : public QObject {
    Q_OBJECT

private slots:
    void rankedByCostAndAllFit()
    {
        plan::PlanInput in;
        const plan::Recommendation rec =
            plan::recommend(in, presetModel("Llama-3.1-8B"), presetCatalog());
        QVERIFY(!rec.cancelled);
        QVERIFY(rec.evaluated > 500);
        QVERIFY(!rec.options.empty());
        for (size_t i = 0; i < rec.options.size(); ++i) {
            const plan::RecommendedOption& o = rec.options[i];
            QVERIFY(o.fits);
            QVERIFY(o.perGpuBytes <= o.usableBytes);
            QCOMPARE(o.gpusTotal, o.gpusPerNode * o.nodes);
            QVERIFY(o.costUsd > 0);
            // Cheaper first, within the 1% ties the ranking allows.
            if (i > 0)
                QVERIFY(rec.options[i - 1].costUsd <= o.costUsd * 1.0101);
            // Each option replays to the same figures.
            if (i < 5) {
                const auto again =
                    plan::planFromCatalog(o.input, presetCatalog(), plan::EstimateOptions{false});
                QVERIFY(again.ok());
                QCOMPARE(again->perGpuBytes, o.perGpuBytes);
                QCOMPARE(again->costUsd, o.costUsd);
            }
        }
    }

    // Whether Tunebench's own trainer runs on a GPU, and why not.
    void trainerSupport_data()
    {
        QTest::addColumn<QString>("gpu");
        QTest::addColumn<bool>("runs");
        QTest::addRow("H100") << "H100-SXM" << true;
        QTest::addRow("A100") << "A100-80GB-SXM" << true;
        QTest::addRow("T4 (Turing, CUDA 13 keeps it)") << "T4" << true;
        QTest::addRow("GB200") << "GB200" << true;
        QTest::addRow("MI300X (ROCm)") << "MI300X" << false;
        QTest::addRow("V100 (Volta, dropped by CUDA 13)") << "V100-16GB" << false;
    }
    void trainerSupport()
    {
        QFETCH(QString, gpu);
        QFETCH(bool, runs);
        const plan::TrainerSupport s = plan::tunebenchTrainerSupport(presetGpu(qPrintable(gpu)));
        QCOMPARE(s.runs, runs);
        QCOMPARE(s.reason.empty(), runs);
    }

    // Options are marked; asked for, the others are rejected with the reason.
    void runnableOnly()
    {
        plan::PlanInput in;
        const plan::Recommendation all =
            plan::recommend(in, presetModel("Llama-3.1-8B"), presetCatalog());
        QVERIFY(std::any_of(all.options.begin(), all.options.end(),
            [](const plan::RecommendedOption& o) { return !o.trainer.runs; }));
        plan::RecommendOptions options;
        options.trainerRunnableOnly = true;
        const plan::Recommendation runnable =
            plan::recommend(in, presetModel("Llama-3.1-8B"), presetCatalog(), options);
        QVERIFY(!runnable.options.empty());
        for (const plan::RecommendedOption& o : runnable.options)
            QVERIFY2(o.trainer.runs, o.vmSize.c_str());
        QVERIFY(hasRejection(runnable, "Standard_ND96isr_MI300X_v5", RejectReason::NotRunnable));
    }

    // The Hugging Face Trainer plan is DDP's: its ZeRO and FSDP are other
    // engines' plans, neither tried nor listed as invalid combinations.
    void hfTrainerTriesDdpOnly()
    {
        plan::PlanInput in;
        in.engine = plan::Engine::HfTrainer;
        in.method = plan::Method::Qlora;
        const plan::Recommendation rec =
            plan::recommend(in, presetModel("Llama-3.1-8B"), presetCatalog());
        QVERIFY(!rec.options.empty());
        for (const plan::RecommendedOption& o : rec.options)
            QVERIFY2(o.strategy == plan::Sharding::Ddp, o.vmSize.c_str());
        for (const plan::RejectedOption& r : rec.rejected)
            QVERIFY2(r.reason != RejectReason::InvalidCombination, r.detail.c_str());
    }

    // FSDP's gradient settings apply to the FSDP candidates: with them set,
    // ZeRO and DDP are still tried, and FSDP is planned with them.
    void fsdpSettingsApplyToFsdpCandidates()
    {
        plan::PlanInput in;
        in.method = plan::Method::Lora;
        in.gradAccum = 8;
        in.fsdp.noSync = true;
        in.fsdp.adaptersInLayerUnits = true;
        plan::RecommendOptions options;
        options.maxNodes = 2;
        const plan::Recommendation rec =
            plan::recommend(in, presetModel("Llama-3.1-8B"), presetCatalog(), options);
        std::set<plan::Sharding> strategies;
        for (const plan::RecommendedOption& o : rec.options) {
            strategies.insert(o.strategy);
            QCOMPARE(o.input.fsdp.noSync, plan::isFsdp(o.strategy));
        }
        QVERIFY(strategies.contains(plan::Sharding::Zero3));
        QVERIFY(strategies.contains(plan::Sharding::FsdpFull));
        for (const plan::RejectedOption& r : rec.rejected)
            QVERIFY2(r.reason != RejectReason::InvalidCombination, r.detail.c_str());
    }

    void rankedByTime()
    {
        plan::RecommendOptions options;
        options.rankBy = plan::RankBy::Time;
        const plan::Recommendation rec = plan::recommend(
            plan::PlanInput{}, presetModel("Llama-3.1-8B"), presetCatalog(), options);
        for (size_t i = 1; i < rec.options.size(); ++i)
            QVERIFY(rec.options[i - 1].hours <= rec.options[i].hours * 1.0101);
    }

    void reasonsForRejections()
    {
        plan::PlanInput in;
        in.model = "Llama-2-70B";
        in.method = plan::Method::Full;
        plan::RecommendOptions options;
        options.maxNodes = 2;
        const plan::Recommendation rec =
            plan::recommend(in, presetModel("Llama-2-70B"), presetCatalog(), options);
        QVERIFY(hasRejection(rec, "Standard_NC6s_v3", RejectReason::Retired));
        QVERIFY(hasRejection(rec, "Standard_NV6ads_A10_v5", RejectReason::NotForTraining));
        QVERIFY(hasRejection(rec, "Standard_ND128isr_GB300_v6", RejectReason::NoPrice));
        QVERIFY(hasRejection(rec, "Standard_NC128ds_xl_RTXPRO6000BSE_v6", RejectReason::Preview));
        QVERIFY(hasRejection(rec, "Standard_NC24ads_A100_v4", RejectReason::DoesNotFit));
        QVERIFY(hasRejection(rec, "Standard_ND96isr_H100_v5", RejectReason::TooManyNodes));
        QVERIFY(hasRejection(rec, "Standard_NC24ads_A100_v4", RejectReason::Redundant));
        for (const plan::RejectedOption& r : rec.rejected) {
            QVERIFY(!r.detail.empty());
            QVERIFY(r.nodesFrom <= r.nodesTo);
            if (r.reason == RejectReason::TooManyNodes)
                QVERIFY(r.nodesFrom > 2);
        }
        for (const plan::RecommendedOption& o : rec.options)
            QVERIFY(o.nodes <= 2);
    }

    void bf16FallbackOnVolta()
    {
        plan::RecommendOptions options;
        options.includeRetired = true; // NCv3 (V100) sizes
        const plan::Recommendation rec = plan::recommend(
            plan::PlanInput{}, presetModel("SmolLM2-360M"), presetCatalog(), options);
        bool volta = false;
        for (const plan::RecommendedOption& o : rec.options) {
            if (o.gpuId != "V100-16GB")
                continue;
            volta = true;
            QCOMPARE(int(o.precision), int(plan::Precision::Fp16Mixed));
            QVERIFY(!o.notes.empty());
        }
        QVERIFY(volta);
        options.allowPrecisionFallback = false;
        const plan::Recommendation strict = plan::recommend(
            plan::PlanInput{}, presetModel("SmolLM2-360M"), presetCatalog(), options);
        QVERIFY(hasRejection(strict, "Standard_NC6s_v3", RejectReason::NoBf16));
    }

    void budgets()
    {
        plan::RecommendOptions options;
        options.rankBy = plan::RankBy::CheapestWithinBudget;
        options.timeBudgetHours = 2;
        const plan::Recommendation rec = plan::recommend(
            plan::PlanInput{}, presetModel("Llama-3.1-8B"), presetCatalog(), options);
        QVERIFY(!rec.options.empty());
        for (const plan::RecommendedOption& o : rec.options)
            QVERIFY(o.hours <= 2);
        bool overBudget = false;
        for (const plan::RejectedOption& r : rec.rejected)
            overBudget = overBudget || r.reason == RejectReason::OverBudget;
        QVERIFY(overBudget);
        options.timeBudgetHours = 0;
        options.maxUsdPerHour = 10;
        for (const plan::RecommendedOption& o : plan::recommend(
                 plan::PlanInput{}, presetModel("Llama-3.1-8B"), presetCatalog(), options)
                                                    .options)
            QVERIFY(o.usdPerHour <= 10);
    }

    void progressAndCancel()
    {
        int calls = 0;
        int lastTotal = 0;
        const plan::Recommendation full = plan::recommend(plan::PlanInput{},
            presetModel("Llama-3.1-8B"), presetCatalog(), {}, [&](int done, int total) {
                ++calls;
                lastTotal = total;
                return done > 0;
            });
        QCOMPARE(calls, int(presetCatalog().vms().size()));
        QCOMPARE(lastTotal, calls);
        QVERIFY(!full.cancelled);
        // Stop after the third VM size.
        const plan::Recommendation stopped =
            plan::recommend(plan::PlanInput{}, presetModel("Llama-3.1-8B"), presetCatalog(), {},
                [](int done, int) { return done < 3; });
        QVERIFY(stopped.cancelled);
        QVERIFY(stopped.evaluated < full.evaluated);
        for (const plan::RecommendedOption& o : stopped.options) {
            bool early = false;
            for (int i = 0; i < 3; ++i)
                early = early || presetCatalog().vms()[size_t(i)].name == o.vmSize;
            QVERIFY(early);
        }
    }

    // What the planner page does (ui/planner/recommendation_runner): a new
    // sweep starts on a worker thread while the cancelled one may still run,
    // both reading the one catalog, and another thread sets the cancel flag
    // the progress hook reads. Under the ThreadSanitizer preset this finds
    // any write to shared state in a sweep; here the finished sweep must
    // equal one run alone.
    void concurrentSweepsShareTheCatalog()
    {
        const plan::PlanInput input;
        const model::ModelSpec& model = presetModel("Llama-3.1-8B");
        const plan::Recommendation alone = plan::recommend(input, model, presetCatalog());

        std::atomic<bool> cancelFirst{false};
        std::atomic<int> firstProgress{0};
        plan::Recommendation first;
        plan::Recommendation second;
        std::thread firstSweep([&] {
            first = plan::recommend(input, model, presetCatalog(), {}, [&](int done, int) {
                firstProgress.store(done);
                return !cancelFirst.load();
            });
        });
        std::thread secondSweep([&] { second = plan::recommend(input, model, presetCatalog()); });
        while (firstProgress.load() == 0 && !cancelFirst.load())
            std::this_thread::yield();
        cancelFirst.store(true);
        firstSweep.join();
        secondSweep.join();

        QVERIFY(!second.cancelled);
        QCOMPARE(second.evaluated, alone.evaluated);
        QCOMPARE(second.options.size(), alone.options.size());
        for (std::size_t i = 0; i < alone.options.size(); ++i) {
            QCOMPARE(second.options[i].vmSize, alone.options[i].vmSize);
            QCOMPARE(second.options[i].costUsd, alone.options[i].costUsd);
        }
        QVERIFY(first.evaluated <= alone.evaluated);
    }
};

QTEST_GUILESS_MAIN(TestRecommender)
#include "test_recommender.moc"
