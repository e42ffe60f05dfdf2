#include "../support/test_paths.h"
#include "config/config_loader.h"
#include "data/batch.h"
#include "data/random.h"
#include "train/llama_model.h"
#include "train/model_loader.h"
#include "train/train_step.h"
#include "train/trainer.h"
#include "train/training_session.h"
#include "train_test_util.h"

#include <QTemporaryDir>
#include <QTest>

#include <filesystem>

// Training converges: each method and precision memorises a few sequences
// within a fixed number of steps; and a run stops when asked.
using namespace tb;
using namespace tb::train;

namespace {

LlamaConfig smallConfig()
{
    LlamaConfig config = testutil::tinyTiedConfig();
    config.vocabSize = 64;
    config.hiddenSize = 32;
    config.intermediateSize = 64;
    config.numHeads = 4;
    config.numKvHeads = 2;
    config.headDim = 8;
    return config;
}

// Four sequences of 16 random ids, every next token trained.
std::vector<data::TokenizedExample> memorisationRows(std::int64_t vocab)
{
    data::Xoshiro256 random(2024);
    std::vector<data::TokenizedExample> rows(4);
    for (auto& row : rows) {
        for (int i = 0; i < 16; ++i)
            row.inputIds.push_back(
                static_cast<std::int32_t>(random.below(static_cast<std::uint64_t>(vocab))));
        row.labels = row.inputIds;
    }
    return rows;
}

} // namespace

class TestTrainConvergence : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { setComputeThreads(1); }

    void memorisesWithinSixtySteps_data()
    {
        QTest::addColumn<int>("method");
        QTest::addColumn<int>("precision");
        QTest::addColumn<bool>("checkpointing");
        QTest::addColumn<double>("learningRate");
        QTest::addColumn<double>("target"); // loss after 60 steps below this (from ~4.9)
        using M = config::Method;
        using P = config::Precision;
        QTest::addRow("full fp32") << int(M::Full) << int(P::Fp32) << false << 1e-2 << 0.05;
        QTest::addRow("full bf16-mixed")
            << int(M::Full) << int(P::Bf16Mixed) << false << 1e-2 << 0.05;
        QTest::addRow("full pure bf16") << int(M::Full) << int(P::Bf16) << false << 1e-2 << 0.05;
        QTest::addRow("full fp32 checkpointed")
            << int(M::Full) << int(P::Fp32) << true << 1e-2 << 0.05;
        QTest::addRow("lora fp32") << int(M::Lora) << int(P::Fp32) << false << 3e-2 << 0.6;
        QTest::addRow("qlora bf16-mixed checkpointed")
            << int(M::Qlora) << int(P::Bf16Mixed) << true << 3e-2 << 0.6;
    }

    void memorisesWithinSixtySteps()
    {
        QFETCH(int, method);
        QFETCH(int, precision);
        QFETCH(bool, checkpointing);
        QFETCH(double, learningRate);
        QFETCH(double, target);
        TrainingSession session;
        session.config.method = static_cast<config::Method>(method);
        session.config.precision = static_cast<config::Precision>(precision);
        session.config.activationCheckpointing = checkpointing;
        session.config.lora.rank = 8;
        session.config.lora.alpha = 16;
        session.config.lora.dropout = 0.0;
        auto base = createCausalLm(smallConfig(), ComputeDType::Float32);
        base->initializeRandom(1, 0.2);
        const auto status = prepareTrainableModel(session, base);
        QVERIFY2(status.ok(), status.ok() ? "" : status.error().toString().c_str());

        const auto rows = memorisationRows(smallConfig().vocabSize);
        data::SamplerOptions sampler;
        sampler.datasetSize = rows.size();
        data::BatchIterator batches(rows, sampler, {4, 0, 0});
        double first = 0.0;
        double last = 0.0;
        for (int step = 1; step <= 60; ++step) {
            const StepResult result = trainStep(*session.model, *session.parameters,
                *session.optimizer, {batches.next()}, learningRate, 1.0);
            QVERIFY(std::isfinite(result.loss));
            if (step == 1)
                first = result.loss;
            last = result.loss;
        }
        qInfo("loss %.4f -> %.4f after 60 steps", first, last);
        QVERIFY2(last < target,
            qPrintable(QString("loss %1 -> %2 after 60 steps").arg(first).arg(last)));
    }

    void aRunStopsWhenAsked()
    {
        QTemporaryDir dir;
        config::LoadOptions options;
        options.checkPaths = true;
        auto loaded =
            config::loadRunConfig(tb::test::sourcePath("presets/recipes/lora.yaml"), options);
        QVERIFY(loaded.ok());
        config::RunConfig config = *loaded;
        config.output.dir = dir.filePath("run").toStdString();
        config.training.maxSteps = 4;
        std::atomic<bool> stop{false};
        TrainerOptions trainer;
        trainer.threads = 1;
        trainer.stopRequested = &stop;
        trainer.progress = [&](const TrainerProgress& item) {
            if (item.kind == TrainerProgress::Kind::Step && item.step == 2)
                stop = true;
        };
        const auto outcome = runTraining(config, trainer);
        QVERIFY2(outcome.ok(), outcome.ok() ? "" : outcome.error().toString().c_str());
        QCOMPARE(outcome->status, RunStatus::Stopped);
        QCOMPARE(outcome->steps, std::int64_t(2));
        QVERIFY(outcome->totalSteps > 2);
        QVERIFY(std::filesystem::exists(outcome->lastCheckpoint + "/trainer_state.json"));
        QVERIFY(outcome->adapterDir.empty()); // exports are for finished runs

        // Asked to stop before it starts: nothing trained, status stopped.
        config::RunConfig other = config;
        other.output.dir = dir.filePath("early").toStdString();
        TrainerOptions early;
        early.threads = 1;
        early.stopRequested = &stop; // still set
        const auto none = runTraining(other, early);
        QVERIFY(none.ok());
        QCOMPARE(none->status, RunStatus::Stopped);
        QCOMPARE(none->steps, std::int64_t(0));

        // Resumed in process, it finishes the remaining steps.
        stop = false;
        trainer.progress = {};
        trainer.resume = true;
        const auto resumed = runTraining(config, trainer);
        QVERIFY2(resumed.ok(), resumed.ok() ? "" : resumed.error().toString().c_str());
        QCOMPARE(resumed->status, RunStatus::Completed);
        QCOMPARE(resumed->steps, outcome->totalSteps);
        QVERIFY(std::filesystem::exists(resumed->adapterDir + "/adapter_model.safetensors"));
    }
};

QTEST_GUILESS_MAIN(TestTrainConvergence)
#include "test_train_convergence.moc"
