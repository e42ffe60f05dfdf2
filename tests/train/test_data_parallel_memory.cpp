#include "../support/model_variants.h"
#include "../support/qt_test_paths.h"
#include "../support/write_or_stop.h"
#include "common/atomic_file.h"
#include "plan/catalog.h"
#include "plan/estimator.h"
#include "run_events.h"

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

// The memory promise of the sharded strategies, measured on real processes:
// `tunebench-cli launch --nproc 4` trains stories260K (full, fp32, AdamW)
// for 2 steps under DDP, ZeRO-1 and ZeRO-3, and each rank's step events say
// how many bytes of each kind of training state it held at most during the
// step (state_bytes: parameters, gradients, master, optimizer). The planner's
// per-GPU model states for the same configuration are printed beside them.
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const QString kCli = tb::test::qBuildPath("app/cli/tunebench-cli");
const std::string kModel = tb::test::demoModelDir();
const std::string kDemo = tb::test::sourcePath("resources/demo/tiny_instructions.jsonl");
constexpr int kRanks = 4;

struct StateBytes {
    double parameters = 0, gradients = 0, master = 0, optimizer = 0;
    double frozen = 0, frozenShard = 0; // the frozen base (LoRA): at most, and between uses
    double total() const { return parameters + gradients + master + optimizer; }
};

// Per rank: the most held of each kind over the run's steps.
struct RunStates {
    std::vector<StateBytes> ranks;
    QString error;

    // The rank holding the most (ranks differ only by the padding of units
    // to a multiple of the shard count).
    StateBytes largest() const
    {
        StateBytes most;
        for (const StateBytes& r : ranks)
            if (r.total() > most.total())
                most = r;
        return most;
    }
};

RunStates launch(const QTemporaryDir& dir, const std::string& sharding, const std::string& method,
    const std::string& model)
{
    RunStates out;
    const std::string runDir = dir.filePath(QString::fromStdString(method + "-" + sharding + "-"
                                                + fs::path(model).filename().string()))
                                   .toStdString();
    const std::string config = runDir + ".yaml";
    tb::test::writeOrStop(config,
        "model: " + model + "\nmethod: " + method + "\nprecision: fp32\ndata:\n  train: " + kDemo
            + "\n  sequence_length: 128\ntraining: {max_steps: 2, micro_batch: 2, "
              "learning_rate: 1e-3}\ndistributed: {sharding: "
            + sharding + "}\noutput: {dir: " + runDir + "}\n");
    QProcess process;
    process.start(
        kCli, {"launch", QString::fromStdString(config), "--nproc", QString::number(kRanks)});
    if (!process.waitForFinished(300000)) {
        process.kill();
        process.waitForFinished();
    }
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
        out.error = QString::fromStdString(sharding)
            + ": launch failed: " + QString::fromUtf8(process.readAllStandardError().right(2000));
        return out;
    }
    for (int rank = 0; rank < kRanks; ++rank) {
        const auto stepEvents = tb::testutil::eventsOfType(
            tb::testutil::readEventFile(runDir
                + (rank == 0 ? std::string("/events.jsonl")
                             : "/events.rank" + std::to_string(rank) + ".jsonl")),
            "step");
        StateBytes most;
        int steps = 0;
        for (const json& event : stepEvents) {
            ++steps;
            const json bytes = event.value("state_bytes", json::object());
            most.parameters = std::max(most.parameters, bytes.value("parameters", 0.0));
            most.gradients = std::max(most.gradients, bytes.value("gradients", 0.0));
            most.master = std::max(most.master, bytes.value("master", 0.0));
            most.optimizer = std::max(most.optimizer, bytes.value("optimizer", 0.0));
            most.frozen = std::max(most.frozen, bytes.value("frozen", 0.0));
            most.frozenShard = std::max(most.frozenShard, bytes.value("frozen_shard", 0.0));
        }
        if (steps != 2) {
            out.error = QString::fromStdString(sharding) + ": rank " + QString::number(rank)
                + " wrote " + QString::number(steps) + " step events, expected 2";
            return out;
        }
        out.ranks.push_back(most);
    }
    return out;
}

// The planner's per-GPU model states for the same run on 4 GPUs of one node.
struct PlannerStates {
    double weights = 0, gradients = 0, optimizer = 0, gather = 0, modelStates = 0;
    double frozenBase = 0; // LoRA: the "Frozen base weights" row
    double total = 0; // every component, activations and CUDA context included
};

PlannerStates planned(tb::plan::Sharding sharding, tb::plan::Method method = tb::plan::Method::Full)
{
    namespace plan = tb::plan;
    PlannerStates out;
    auto catalog = plan::Catalog::load(tb::test::sourcePath("presets"));
    if (!catalog)
        return out;
    auto spec = catalog->resolveModel(kModel);
    const plan::GpuSpec* gpu = catalog->findGpu("A100-80GB-SXM");
    if (!spec || !gpu)
        return out;
    plan::PlanInput input;
    input.model = kModel;
    input.method = method;
    input.precision = plan::Precision::Fp32;
    input.optimizer = plan::Optimizer::AdamW;
    input.sharding = sharding;
    input.microBatch = 2;
    input.seqLen = 128;
    input.gradAccum = 1;
    input.vmSize = "";
    input.gpu = gpu->id;
    input.gpusPerNode = kRanks;
    const plan::PlanResult r = plan::estimatePlan(input, *spec, *gpu, nullptr, {false});
    out.weights = r.categoryBytes(plan::MemoryCategory::Weights);
    if (const plan::MemoryComponent* c = r.component("weights"))
        out.frozenBase = method == plan::Method::Full ? 0 : c->bytes;
    out.gradients = r.categoryBytes(plan::MemoryCategory::Gradients);
    out.optimizer = r.categoryBytes(plan::MemoryCategory::Optimizer);
    if (const plan::MemoryComponent* c = r.component("gather_buffers"))
        out.gather = c->bytes;
    out.modelStates = r.modelStatesBytes;
    out.total = r.perGpuBytes;
    return out;
}

void report(const char* name, const StateBytes& measured, const PlannerStates& plan)
{
    qInfo("%s, per rank: parameters %.0f + gradients %.0f + master %.0f + optimizer %.0f = %.0f "
          "bytes; planner per GPU: weights %.0f + gradients %.0f + optimizer %.0f (+ ZeRO-3 "
          "gather %.0f) = model states %.0f bytes; measured / planner %.3f",
        name, measured.parameters, measured.gradients, measured.master, measured.optimizer,
        measured.total(), plan.weights, plan.gradients, plan.optimizer, plan.gather,
        plan.modelStates, measured.total() / plan.modelStates);
}

} // namespace

class TestDataParallelMemory : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::map<std::string, RunStates> m_runs;

    const RunStates& run(
        const std::string& sharding, const std::string& method = "full", bool untied = false)
    {
        const std::string key = method + " " + sharding + (untied ? " untied" : "");
        auto it = m_runs.find(key);
        if (it == m_runs.end()) {
            const std::string model = untied
                ? tb::test::writeUntiedCopy(kModel, m_dir.filePath("untied").toStdString())
                : kModel;
            it = m_runs.emplace(key, launch(m_dir, sharding, method, model)).first;
        }
        return it->second;
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(fs::exists(kCli.toStdString()), qPrintable("not built: " + kCli));
        QVERIFY(m_dir.isValid());
    }

    // DDP replicates everything: with fp32 there is no separate master (the
    // flat fp32 values are the master), so parameters + gradients +
    // optimizer are 4 + 4 + 8 bytes per parameter, exactly the planner's
    // fp32 DDP model states (weights 4 N + gradients 4 N + AdamW 8 N, no
    // master because fp32 is not mixed precision). Apples to apples: the
    // only difference allowed is rounding of the flat buffers.
    void ddpMatchesThePlanner()
    {
        const RunStates& ddp = run("ddp");
        QVERIFY2(ddp.error.isEmpty(), qPrintable(ddp.error));
        const PlannerStates plan = planned(tb::plan::Sharding::Ddp);
        QVERIFY(plan.modelStates > 0);
        for (const StateBytes& rank : ddp.ranks) {
            QCOMPARE(rank.master, 0.0);
            QCOMPARE(rank.optimizer, 2 * rank.parameters); // two fp32 moments
        }
        report("DDP", ddp.largest(), plan);
        const double ratio = ddp.largest().total() / plan.modelStates;
        QVERIFY2(ratio > 0.98 && ratio < 1.02, qPrintable(QString::number(ratio)));
    }

    // ZeRO-1 partitions only the optimizer states: each rank's AdamW moments
    // are a quarter of DDP's (units padded to a multiple of 4 elements).
    void zero1ShardsTheOptimizer()
    {
        const RunStates& ddp = run("ddp");
        const RunStates& zero1 = run("zero1");
        QVERIFY2(ddp.error.isEmpty(), qPrintable(ddp.error));
        QVERIFY2(zero1.error.isEmpty(), qPrintable(zero1.error));
        const double reference = ddp.largest().optimizer;
        for (const StateBytes& rank : zero1.ranks) {
            const double ratio = rank.optimizer / reference;
            QVERIFY2(ratio > 0.24 && ratio < 0.27, qPrintable(QString::number(ratio)));
        }
        // Comparison only: the planner plans ZeRO-1 with ZeRO-2's memory
        // (docs/PLANNER.md 10) and, in fp32, counts no master; the trainer
        // keeps a separate fp32 master shard and master gradient shard
        // (8 N / 4) beside the replicated values and gradients.
        report("ZeRO-1", zero1.largest(), planned(tb::plan::Sharding::Zero1));
    }

    // ZeRO-3 partitions everything: per rank about a quarter of DDP's states
    // plus what is gathered at the peak.
    // LoRA under FSDP shards the frozen base as well: each rank keeps a
    // quarter of what a DDP rank holds, which is what the planner's "Frozen
    // base weights" row says per GPU; during a step it holds that quarter
    // plus the units gathered (root + the current and the prefetched layer,
    // as for the trainable values).
    void loraFsdpShardsTheFrozenBase_data()
    {
        QTest::addColumn<QString>("sharding");
        QTest::addColumn<int>("planSharding");
        QTest::newRow("fsdp-full") << "fsdp-full" << int(tb::plan::Sharding::FsdpFull);
        QTest::newRow("zero3") << "zero3" << int(tb::plan::Sharding::Zero3);
    }

    void loraFsdpShardsTheFrozenBase()
    {
        QFETCH(QString, sharding);
        QFETCH(int, planSharding);
        const RunStates& ddp = run("ddp", "lora");
        const RunStates& sharded = run(sharding.toStdString(), "lora");
        QVERIFY2(ddp.error.isEmpty(), qPrintable(ddp.error));
        QVERIFY2(sharded.error.isEmpty(), qPrintable(sharded.error));
        const double whole = ddp.largest().frozenShard;
        QVERIFY(whole > 0);
        for (const StateBytes& rank : ddp.ranks)
            QCOMPARE(rank.frozen, whole); // replicated, never released
        const PlannerStates plan =
            planned(static_cast<tb::plan::Sharding>(planSharding), tb::plan::Method::Lora);
        double peak = 0;
        for (const StateBytes& rank : sharded.ranks) {
            // Slots are 16-byte aligned and units padded to a multiple of 4 bytes.
            const double share = rank.frozenShard / whole;
            QVERIFY2(share > 0.245 && share < 0.26, qPrintable(QString::number(share)));
            const double vsPlan = rank.frozenShard / plan.frozenBase;
            qInfo("LoRA %s, rank: frozen base kept %.0f bytes (%.3f of DDP's %.0f), at most %.0f "
                  "during a step; planner's frozen base weights per GPU %.0f (measured / planned "
                  "%.3f)",
                qPrintable(sharding), rank.frozenShard, share, whole, rank.frozen, plan.frozenBase,
                vsPlan);
            QVERIFY2(vsPlan > 0.97 && vsPlan < 1.03, qPrintable(QString::number(vsPlan)));
            peak = std::max(peak, rank.frozen / whole);
        }
        // Root (the tied embedding, a third of stories260K) and two layers
        // gathered at once, with the quarter kept: well under the whole.
        QVERIFY2(peak < 0.8, qPrintable(QString::number(peak)));
    }

    void zero3ShardsEverything()
    {
        const RunStates& ddp = run("ddp");
        const RunStates& zero3 = run("zero3");
        QVERIFY2(ddp.error.isEmpty(), qPrintable(ddp.error));
        QVERIFY2(zero3.error.isEmpty(), qPrintable(zero3.error));
        const double reference = ddp.largest().total();
        double ratio = 0;
        for (const StateBytes& rank : zero3.ranks) {
            // The persistent part is this rank's shards: fp32 master weights,
            // master gradients (4 + 4 bytes) and AdamW moments (8 bytes) of a
            // quarter of the parameters: DDP's 16 bytes per parameter / 4,
            // units padded to a multiple of 4 elements.
            const double sharded = (rank.master + rank.optimizer) / reference;
            QVERIFY2(sharded > 0.24 && sharded < 0.27, qPrintable(QString::number(sharded)));
            ratio = std::max(ratio, rank.total() / reference);
        }
        qInfo("ZeRO-3 per-rank total / DDP per-rank total: %.3f", ratio);
        QVERIFY2(ratio > 0.2, qPrintable(QString::number(ratio)));

        // The promise: a quarter plus the gathered units. For stories260K
        // (5 decoder layers of 45,440 parameters, root unit of 32,832: the
        // tied embedding and the final norm) the planner's peak (docs/
        // PLANNER.md 4.6: root unit + current and prefetched layer, one
        // layer's and the root's gradients, all fp32 here) is 0.444 of DDP.
        // The trainer frees a unit's values as soon as its gradients are in
        // and keeps one reduction in flight, so at the backward peak it
        // holds root + 2 layers of values and root + 2 layers of gradients
        // (the one being reduced while the next is computed): 0.488 of DDP,
        // measured 2026-11-21. A first version held 4 layers (0.62).
        QVERIFY2(ratio < 0.5, qPrintable(QString::number(ratio)));

        // Comparison only, not asserted. Both sides count the same sharded
        // 16 N / 4 (the trainer's master shard and master gradient shard are
        // the planner's weight and gradient partitions; fp32 has no other
        // master), but the gathered part is a different model: the
        // planner's ZeRO-3 uses DeepSpeed's estimator, 2 x 4 bytes x the
        // largest single module (here the tied embedding), while the
        // trainer gathers FSDP-style units, which is what the planner's
        // FSDP FULL_SHARD counts as "gathered units" (a Buffers component
        // outside its model states), added here.
        const StateBytes measured = zero3.largest();
        report("ZeRO-3", measured, planned(tb::plan::Sharding::Zero3));
        const PlannerStates fsdp = planned(tb::plan::Sharding::FsdpFull);
        qInfo("ZeRO-3 per rank %.0f bytes; planner FSDP FULL_SHARD model states %.0f + gathered "
              "units %.0f = %.0f bytes; measured / planner %.3f",
            measured.total(), fsdp.modelStates, fsdp.gather, fsdp.modelStates + fsdp.gather,
            measured.total() / (fsdp.modelStates + fsdp.gather));
    }

    // With an lm_head of its own, the embedding and the head are used at
    // opposite ends of the step and gathered apart: the embedding for its
    // forward only (its backward reads the token ids, not the weight), the
    // head from the loss to the end of its backward, which comes before the
    // last layer's. So at most two decoder layers (45,440 fp32 values each),
    // or one layer and one end (32,768 or 32,832 with the final norm), are
    // whole at once. One root unit kept the whole step, as FSDP keeps its
    // root, would add both ends (65,600 values) to the two layers.
    void untiedEmbeddingAndHeadAreGatheredApart()
    {
        const RunStates& zero3 = run("zero3", "full", true);
        QVERIFY2(zero3.error.isEmpty(), qPrintable(zero3.error));
        constexpr double kLayer = 45440, kHead = 32768 + 64, kBoth = 2 * 32768 + 64;
        const double apart = std::max(2 * kLayer, kHead + kLayer) * 4;
        for (const StateBytes& rank : zero3.ranks) {
            qInfo("untied ZeRO-3 rank: %.0f bytes of gathered values at most; two layers %.0f, "
                  "a root unit and two layers %.0f",
                rank.parameters, apart, (kBoth + 2 * kLayer) * 4);
            // Units are padded to a multiple of the 4 ranks: a few elements each.
            QVERIFY2(
                rank.parameters <= apart + 2 * 4 * 4, qPrintable(QString::number(rank.parameters)));
            QVERIFY2(rank.parameters >= apart, qPrintable(QString::number(rank.parameters)));
        }
    }
};

QTEST_GUILESS_MAIN(TestDataParallelMemory)
#include "test_data_parallel_memory.moc"
