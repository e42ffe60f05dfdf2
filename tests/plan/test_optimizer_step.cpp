#include "plan_fixture.h"

#include "model/parameter_count.h"
#include "plan/plan_file.h"

#include <algorithm>

// The optimizer step as its own phase (docs/PLANNER.md 4.12): every gradient
// alive, no activations, and what the update allocates beyond its states,
// worked out here from PyTorch's and transformers' optimizers as the docs
// state them.
using namespace tb;
using plan::Optimizer;
using plan::OptimizerKernel;
using plan::Phase;
using plan::Precision;
using plan::Sharding;

Q_DECLARE_METATYPE(tb::plan::Sharding)
Q_DECLARE_METATYPE(tb::plan::Precision)
Q_DECLARE_METATYPE(tb::plan::Optimizer)
Q_DECLARE_METATYPE(tb::plan::OptimizerKernel)

namespace {

const plan::PhasePeak& phaseOf(const plan::PlanResult& r, Phase phase)
{
    const auto found = std::find_if(r.phases.begin(), r.phases.end(),
        [phase](const plan::PhasePeak& p) { return p.phase == phase; });
    if (found == r.phases.end())
        qFatal("no phase %s", std::string(plan::phaseKey(phase)).c_str());
    return *found;
}

double componentBytes(const plan::PlanResult& r, const char* key)
{
    double bytes = 0;
    for (const plan::MemoryComponent& c : r.memory)
        if (c.key == key)
            bytes += c.bytes;
    return bytes;
}

// States, buckets and what lies outside the allocator: the optimizer phase
// less its temporaries, with the gradients at their full count.
double withoutTemporaries(const plan::PlanResult& r, double allGradients)
{
    double bytes = 0;
    for (const plan::MemoryComponent& c : r.memory) {
        const bool state = c.category == plan::MemoryCategory::Weights
            || c.category == plan::MemoryCategory::Optimizer
            || (c.category == plan::MemoryCategory::Gradients && c.key != "gradients");
        const bool outside = c.key == "cuda_context" || c.key == "nccl_buffers";
        if ((state && c.key != "weights_full") || outside || c.key == "comm_buckets")
            bytes += c.bytes;
    }
    return bytes + allGradients;
}

// A 7B full fine-tune whose activations are small (checkpointing, one short
// sequence), so the update decides the peak.
plan::PlanInput fullFineTune(Sharding sharding, int gpus)
{
    plan::PlanInput in = fullInput(sharding, gpus, 1);
    in.model = "Llama-2-7B";
    in.gpu = "A100-80GB-SXM";
    in.vmSize.clear();
    in.seqLen = 512;
    in.gradAccum = 1;
    return in;
}

plan::PlanResult planOf(const plan::PlanInput& in)
{
    const common::Result<plan::PlanResult> r = plan::planFromCatalog(in, presetCatalog());
    if (!r.ok())
        qFatal("does not plan: %s", r.error().message.c_str());
    return *r;
}

} // namespace

class TestOptimizerStep : public QObject {
    Q_OBJECT
private slots:
    // Each engine lists the optimizer step after forward and backward.
    void everyEngineHasTheOptimizerStep_data()
    {
        QTest::addColumn<int>("engine");
        QTest::addColumn<QList<int>>("order");
        QTest::addRow("reference") << int(plan::Engine::Reference)
                                   << QList<int>{int(Phase::Step), int(Phase::OptimizerStep)};
        QTest::addRow("tunebench")
            << int(plan::Engine::Tunebench)
            << QList<int>{int(Phase::Load), int(Phase::Step), int(Phase::OptimizerStep),
                   int(Phase::Checkpoint), int(Phase::Export)};
    }
    void everyEngineHasTheOptimizerStep()
    {
        QFETCH(int, engine);
        QFETCH(QList<int>, order);
        plan::PlanInput in = fullFineTune(Sharding::Ddp, 1);
        in.engine = plan::Engine(engine);
        const plan::PlanResult r = planOf(in);
        QCOMPARE(int(r.phases.size()), int(order.size()));
        for (int i = 0; i < int(order.size()); ++i) {
            QCOMPARE(int(r.phases[size_t(i)].phase), order[i]);
            QVERIFY(!r.phases[size_t(i)].explanation.empty());
        }
        QCOMPARE(r.perGpuBytes, r.peakPhase()->bytes);
    }

    // What the update allocates: foreach AdamW the size of the variance
    // state (half of AdamW's states), the fused kernels nothing, Adafactor
    // its largest tensor's update and estimate (and fp32 copies of a bf16
    // gradient and parameter), offloaded states nothing on the GPU.
    void temporariesOfEachOptimizer_data()
    {
        QTest::addColumn<Optimizer>("optimizer");
        QTest::addColumn<OptimizerKernel>("kernel");
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<int>("gpus");
        QTest::addColumn<bool>("offloaded");
        QTest::addColumn<double>("expectedPerParam"); // bytes per parameter updated on this GPU
        QTest::addColumn<bool>("perLargestTensor"); // else per trainable parameter

        QTest::addRow("foreach, bf16 mixed: fp32 variance")
            << Optimizer::AdamW << OptimizerKernel::Foreach << Precision::Bf16Mixed << Sharding::Ddp
            << 1 << false << 4.0 << false;
        QTest::addRow("foreach, pure bf16: bf16 variance")
            << Optimizer::AdamW << OptimizerKernel::Foreach << Precision::Bf16 << Sharding::Ddp << 1
            << false << 2.0 << false;
        QTest::addRow("foreach, FSDP: the shard's variance")
            << Optimizer::AdamW << OptimizerKernel::Foreach << Precision::Bf16Mixed
            << Sharding::FsdpFull << 4 << false << 4.0 << false;
        QTest::addRow("fused") << Optimizer::AdamW << OptimizerKernel::Fused << Precision::Bf16Mixed
                               << Sharding::Ddp << 1 << false << 0.0 << false;
        QTest::addRow("auto under DeepSpeed: FusedAdam")
            << Optimizer::AdamW << OptimizerKernel::Auto << Precision::Bf16Mixed << Sharding::Zero2
            << 4 << false << 0.0 << false;
        QTest::addRow("auto under the HF Trainer: adamw_torch_fused")
            << Optimizer::AdamW << OptimizerKernel::Auto << Precision::Bf16Mixed << Sharding::Ddp
            << 1 << false << 0.0 << false;
        QTest::addRow("foreach, offloaded states update on the CPU")
            << Optimizer::AdamW << OptimizerKernel::Foreach << Precision::Bf16Mixed
            << Sharding::Zero2 << 4 << true << 0.0 << false;
        QTest::addRow("8-bit AdamW in place")
            << Optimizer::AdamW8bit << OptimizerKernel::Auto << Precision::Bf16Mixed
            << Sharding::Ddp << 1 << false << 0.0 << false;
        QTest::addRow("SGD in place")
            << Optimizer::Sgd << OptimizerKernel::Auto << Precision::Bf16Mixed << Sharding::Ddp << 1
            << false << 0.0 << false;
        QTest::addRow("Adafactor, fp32 parameters")
            << Optimizer::Adafactor << OptimizerKernel::Auto << Precision::Bf16Mixed
            << Sharding::Ddp << 1 << false << 8.0 << true;
        QTest::addRow("Adafactor, bf16 parameters")
            << Optimizer::Adafactor << OptimizerKernel::Auto << Precision::Bf16 << Sharding::Ddp
            << 1 << false << 16.0 << true;
    }
    void temporariesOfEachOptimizer()
    {
        QFETCH(Optimizer, optimizer);
        QFETCH(OptimizerKernel, kernel);
        QFETCH(Precision, precision);
        QFETCH(Sharding, sharding);
        QFETCH(int, gpus);
        QFETCH(bool, offloaded);
        QFETCH(double, expectedPerParam);
        QFETCH(bool, perLargestTensor);
        plan::PlanInput in = fullFineTune(sharding, gpus);
        in.optimizer = optimizer;
        in.optimizerKernel = kernel;
        in.precision = precision;
        in.offload = offloaded ? plan::Offload::Optimizer : plan::Offload::None;
        const plan::PlanResult r = planOf(in);

        // Gradients at their full count: one GPU without accumulation plans
        // fewer at the backward peak, never at the update.
        plan::PlanInput accumulating = in;
        accumulating.gradAccum = 2;
        const double allGradients = componentBytes(planOf(accumulating), "gradients");
        const double temporaries = r.optimizerTemporaryBytes;
        QCOMPARE(phaseOf(r, Phase::OptimizerStep).bytes,
            withoutTemporaries(r, allGradients) + temporaries);

        const model::ParameterCount n = model::countParameters(presetModel("Llama-2-7B"));
        const double shards = sharding == Sharding::Ddp ? 1 : gpus;
        const double updated = perLargestTensor ? double(n.largestLayer) : double(n.total) / shards;
        QVERIFY2(std::abs(temporaries - expectedPerParam * updated) <= 1e-9 * r.perGpuBytes + 1,
            qPrintable(
                QStringLiteral("temporaries %1, expected %2: %3")
                    .arg(temporaries)
                    .arg(expectedPerParam * updated)
                    .arg(QString::fromStdString(phaseOf(r, Phase::OptimizerStep).explanation))));
    }

    // A 7B full fine-tune with checkpointing peaks at the foreach update,
    // not in backward; the fused kernel brings it back under.
    void theUpdateCanSetThePeak()
    {
        plan::PlanInput in = fullFineTune(Sharding::Ddp, 1);
        in.optimizerKernel = OptimizerKernel::Foreach;
        const plan::PlanResult foreach = planOf(in);
        QCOMPARE(foreach.peakPhase()->phase, Phase::OptimizerStep);
        QVERIFY(foreach.perGpuBytes > foreach.peaks.deviceUsed);
        QCOMPARE(foreach.stepPeakAt(plan::PeakLevel::Allocated),
            phaseOf(foreach, Phase::OptimizerStep).allocated);

        in.optimizerKernel = OptimizerKernel::Fused;
        const plan::PlanResult fused = planOf(in);
        QVERIFY(fused.perGpuBytes < foreach.perGpuBytes);
        QCOMPARE(fused.perGpuBytes - foreach.perGpuBytes,
            phaseOf(fused, Phase::OptimizerStep).bytes
                - phaseOf(foreach, Phase::OptimizerStep).bytes);
    }

    // Long sequences without checkpointing: backward stays the peak, and the
    // allocator's reserve from it is what a later phase must exceed.
    void backwardStaysThePeakWhenActivationsDominate()
    {
        plan::PlanInput in = fullFineTune(Sharding::Ddp, 1);
        in.optimizerKernel = OptimizerKernel::Foreach;
        in.model = "Llama-3.2-3B";
        in.gradientCheckpointing = false;
        in.microBatch = 8;
        in.seqLen = 4096;
        const plan::PlanResult r = planOf(in);
        QCOMPARE(r.peakPhase()->phase, Phase::Step);
        QCOMPARE(r.stepPeakAt(plan::PeakLevel::Reserved), r.peaks.reserved);
        QVERIFY(phaseOf(r, Phase::OptimizerStep).bytes < r.peaks.deviceUsed);
    }

    // An option that cannot apply is refused, naming the field and the value.
    void kernelsThatCannotApplyAreRefused_data()
    {
        QTest::addColumn<Optimizer>("optimizer");
        QTest::addColumn<OptimizerKernel>("kernel");
        QTest::addColumn<int>("engine");
        QTest::addColumn<QString>("message");
        QTest::addRow("foreach with SGD")
            << Optimizer::Sgd << OptimizerKernel::Foreach << int(plan::Engine::Reference)
            << "optimizer_kernel: foreach is AdamW's";
        QTest::addRow("fused with Adafactor")
            << Optimizer::Adafactor << OptimizerKernel::Fused << int(plan::Engine::Reference)
            << "optimizer_kernel: fused is AdamW's";
        QTest::addRow("foreach in our trainer")
            << Optimizer::AdamW << OptimizerKernel::Foreach << int(plan::Engine::Tunebench)
            << "optimizer_kernel: foreach, expected fused or auto with engine tunebench";
    }
    void kernelsThatCannotApplyAreRefused()
    {
        QFETCH(Optimizer, optimizer);
        QFETCH(OptimizerKernel, kernel);
        QFETCH(int, engine);
        QFETCH(QString, message);
        plan::PlanInput in = fullFineTune(Sharding::Ddp, 1);
        in.optimizer = optimizer;
        in.optimizerKernel = kernel;
        in.engine = plan::Engine(engine);
        const common::Status valid = plan::validatePlanInput(in);
        QVERIFY(!valid);
        QVERIFY2(QString::fromStdString(valid.error().message).contains(message),
            valid.error().message.c_str());
    }

    // DeepSpeed's torch_adam picks torch.optim.AdamW (foreach); the import
    // says what it applied.
    void deepSpeedTorchAdamIsImported_data()
    {
        QTest::addColumn<QString>("params");
        QTest::addColumn<OptimizerKernel>("kernel");
        QTest::addRow("torch_adam true")
            << R"("params": {"torch_adam": true})" << OptimizerKernel::Foreach;
        QTest::addRow("torch_adam false")
            << R"("params": {"torch_adam": false})" << OptimizerKernel::Fused;
        QTest::addRow("no params") << R"("params": {"lr": 1e-5})" << OptimizerKernel::Auto;
    }
    void deepSpeedTorchAdamIsImported()
    {
        QFETCH(QString, params);
        QFETCH(OptimizerKernel, kernel);
        const std::string text =
            R"({"zero_optimization": {"stage": 2}, "optimizer": {"type": "AdamW", )"
            + params.toStdString() + "}}";
        const auto imported = plan::parseDeepSpeedJson(text, "ds.json", plan::PlanInput{});
        QVERIFY2(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
        QCOMPARE(int(imported->input.optimizerKernel), int(kernel));
        const bool said = std::any_of(imported->applied.begin(), imported->applied.end(),
            [](const std::string& a) { return a.find("torch_adam") != std::string::npos; });
        QCOMPARE(said, kernel != OptimizerKernel::Auto);
    }

    void aWrongTorchAdamNamesTheField()
    {
        const auto imported = plan::parseDeepSpeedJson(
            R"({"optimizer": {"type": "AdamW", "params": {"torch_adam": "yes"}}})", "ds.json",
            plan::PlanInput{});
        QVERIFY(!imported.ok());
        QVERIFY2(imported.error().message.find("optimizer.params.torch_adam") != std::string::npos
                && imported.error().message.find("\"yes\"") != std::string::npos,
            imported.error().message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestOptimizerStep)
#include "test_optimizer_step.moc"
