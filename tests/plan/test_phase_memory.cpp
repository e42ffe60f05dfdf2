#include "plan_fixture.h"

#include "model/parameter_count.h"
#include "plan/cpu_device.h"

#include <algorithm>

// The load, checkpoint and export phases the planner gives Tunebench's
// trainer beside the steps (docs/PLANNER.md 4.11), each term worked out here
// from the trainer's code as the docs state it.
using namespace tb;
using plan::Method;
using plan::Phase;
using plan::Precision;
using plan::Sharding;

Q_DECLARE_METATYPE(tb::plan::Sharding)
Q_DECLARE_METATYPE(tb::plan::Method)
Q_DECLARE_METATYPE(tb::plan::Precision)

namespace {

// A Llama of 162 M parameters with an untied head, stored in float32: the
// shape of the sharded-memory benchmark's 16-layer model.
model::ModelSpec benchModel()
{
    model::ModelSpec m;
    m.name = "bench-16";
    m.hiddenSize = 768;
    m.intermediateSize = 2048;
    m.numLayers = 16;
    m.numHeads = 12;
    m.numKvHeads = 12;
    m.headDim = 64;
    m.vocabSize = 32000;
    m.maxPositionEmbeddings = 512;
    m.torchDtype = "float32";
    return m;
}

const plan::GpuSpec& twoCoreCpu()
{
    static const plan::GpuSpec cpu = plan::cpuDevice({2, 24.0 * (1ull << 30), 20, "test CPU"});
    return cpu;
}

plan::PlanInput runInput(Method method, Precision precision, Sharding sharding, int ranks)
{
    plan::PlanInput in;
    in.model = "bench-16";
    in.method = method;
    in.precision = precision;
    in.sharding = sharding;
    in.gpusPerNode = ranks;
    in.microBatch = 1;
    in.gradAccum = 1;
    in.seqLen = 256;
    in.gpu = plan::kCpuDeviceId;
    in.vmSize.clear();
    in.engine = plan::Engine::Tunebench;
    return in;
}

double phaseBytes(const plan::PlanResult& r, Phase phase)
{
    const auto found = std::find_if(r.phases.begin(), r.phases.end(),
        [phase](const plan::PhasePeak& p) { return p.phase == phase; });
    return found == r.phases.end() ? -1 : found->bytes;
}

// What lives from loading to the end: states and the process.
double persistentBytes(const plan::PlanResult& r)
{
    double bytes = 0;
    for (const plan::MemoryComponent& c : r.memory) {
        const bool state = c.category == plan::MemoryCategory::Weights
            || c.category == plan::MemoryCategory::Gradients
            || c.category == plan::MemoryCategory::Optimizer;
        if ((state && c.key != "weights_full") || c.key == "process_runtime")
            bytes += c.bytes;
    }
    return bytes;
}

// The bench model's largest projection: gate, up and down, 768 x 2048.
double largestLinear()
{
    return 768.0 * 2048;
}

double largestUnit(const model::ParameterCount& n)
{
    return double(std::max({n.perLayer, n.embedding, n.lmHead + n.finalNorm}));
}

} // namespace

class TestPhaseMemory : public QObject {
    Q_OBJECT
private slots:
    // The reference engines are planned at forward and backward and the
    // optimizer step; our trainer at every phase, and the largest is what
    // "fits" is judged by.
    void phasesOfEachEngine()
    {
        plan::PlanInput in = runInput(Method::Full, Precision::Fp32, Sharding::Ddp, 1);
        in.engine = plan::Engine::Reference;
        const plan::PlanResult reference = plan::estimatePlan(in, benchModel(), twoCoreCpu());
        QCOMPARE(reference.phases.size(), size_t(2));
        QCOMPARE(reference.phases[0].phase, Phase::Step);
        QCOMPARE(reference.phases[1].phase, Phase::OptimizerStep);
        QCOMPARE(reference.perGpuBytes, reference.peakPhase()->bytes);

        in.engine = plan::Engine::Tunebench;
        const plan::PlanResult ours = plan::estimatePlan(in, benchModel(), twoCoreCpu());
        QCOMPARE(ours.phases.size(), size_t(5));
        const Phase order[] = {
            Phase::Load, Phase::Step, Phase::OptimizerStep, Phase::Checkpoint, Phase::Export};
        for (size_t i = 0; i < 5; ++i) {
            QCOMPARE(ours.phases[i].phase, order[i]);
            QVERIFY(!ours.phases[i].explanation.empty());
            QVERIFY(ours.phases[i].bytes <= ours.perGpuBytes);
        }
        QCOMPARE(ours.perGpuBytes, ours.peakPhase()->bytes);
        QCOMPARE(ours.headroomBytes, ours.usableBytes - ours.perGpuBytes);
    }

    // Loading: what the trainer holds beyond its states while it reads the
    // model (train/training_session.cpp).
    void loadPhase_data()
    {
        const model::ParameterCount n = model::countParameters(benchModel());
        const double N = double(n.total);
        QTest::addColumn<Method>("method");
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<int>("ranks");
        QTest::addColumn<double>("extraOverPersistentStates"); // < 0: compute from the states
        // fp32: the model read is the model trained; its tensors become the states.
        QTest::addRow("fp32 full, one rank")
            << Method::Full << Precision::Fp32 << Sharding::Ddp << 1 << 0.0;
        QTest::addRow("fp32 lora, one rank")
            << Method::Lora << Precision::Fp32 << Sharding::Ddp << 1 << 0.0;
        // bf16: the fp32 model read whole and its bf16 copy stay beside the
        // states built from them.
        QTest::addRow("bf16-mixed full, one rank")
            << Method::Full << Precision::Bf16Mixed << Sharding::Ddp << 1 << 6 * N;
        QTest::addRow("bf16-mixed full, ZeRO-2 over 2")
            << Method::Full << Precision::Bf16Mixed << Sharding::Zero2 << 2 << 6 * N;
        // LoRA: the bf16 copy's frozen weights are the states; QLoRA quantises
        // them, after fp32 and bf16 copies of the whole model existed at once.
        QTest::addRow("bf16-mixed lora, one rank")
            << Method::Lora << Precision::Bf16Mixed << Sharding::Ddp << 1 << 4 * N;
        QTest::addRow("qlora, one rank")
            << Method::Qlora << Precision::Bf16Mixed << Sharding::Ddp << 1 << -1.0;
        // Sharded: each rank reads its slices into its shards (a slice's
        // buffer is gone before the shards after it exist); QLoRA quantises
        // a whole fp32 projection.
        QTest::addRow("fp32 full, ZeRO-3 over 2")
            << Method::Full << Precision::Fp32 << Sharding::Zero3 << 2 << 0.0;
        QTest::addRow("fp32 lora, FULL_SHARD over 4")
            << Method::Lora << Precision::Fp32 << Sharding::FsdpFull << 4 << 0.0;
        QTest::addRow("bf16-mixed full, ZeRO-3 over 2")
            << Method::Full << Precision::Bf16Mixed << Sharding::Zero3 << 2 << 0.0;
        QTest::addRow("qlora, ZeRO-3 over 2")
            << Method::Qlora << Precision::Bf16Mixed << Sharding::Zero3 << 2 << 4 * largestLinear();
    }
    void loadPhase()
    {
        QFETCH(Method, method);
        QFETCH(Precision, precision);
        QFETCH(Sharding, sharding);
        QFETCH(int, ranks);
        QFETCH(double, extraOverPersistentStates);
        const plan::PlanResult r = plan::estimatePlan(
            runInput(method, precision, sharding, ranks), benchModel(), twoCoreCpu());
        const double kept = persistentBytes(r);
        double expected = extraOverPersistentStates;
        if (expected < 0) {
            const double N = double(r.paramsTotal);
            const double runtime = r.component("process_runtime")->bytes;
            expected = std::max(6 * N - (kept - runtime), 4 * N);
        }
        QCOMPARE(phaseBytes(r, Phase::Load), kept + expected);
    }

    // A one-process bf16 run holds more while it loads than in a step:
    // the plan says so and judges the fit by it.
    void loadCanSetThePeak()
    {
        const plan::PlanResult r =
            plan::estimatePlan(runInput(Method::Full, Precision::Bf16Mixed, Sharding::Ddp, 1),
                benchModel(), twoCoreCpu());
        QCOMPARE(r.peakPhase()->phase, Phase::Load);
        QVERIFY(r.perGpuBytes > r.peaks.deviceUsed);
    }

    // On a GPU the conversion happens on the host: the device receives the
    // model once, in its compute dtype.
    void gpuLoadHoldsTheStates()
    {
        plan::PlanInput in = runInput(Method::Full, Precision::Bf16Mixed, Sharding::Ddp, 1);
        in.gpu = "H100-SXM";
        const plan::PlanResult r = plan::estimatePlan(in, benchModel(), presetGpu("H100-SXM"));
        double kept = 0;
        for (const plan::MemoryComponent& c : r.memory)
            if (c.category <= plan::MemoryCategory::Optimizer || c.key == "cuda_context")
                kept += c.bytes;
        QCOMPARE(phaseBytes(r, Phase::Load), kept);
    }

    // Export: the states stay, the largest tensor is written, and a sharded
    // run gathers a unit at a time onto rank 0 (Gloo adds its flat copy).
    void exportPhase_data()
    {
        const model::ParameterCount n = model::countParameters(benchModel());
        const double projection = 768.0 * 2048;
        QTest::addColumn<Method>("method");
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<int>("ranks");
        QTest::addColumn<double>("extra");
        QTest::addRow("full, one rank: fp32 file, nothing converted")
            << Method::Full << Precision::Fp32 << Sharding::Ddp << 1 << 0.0;
        QTest::addRow("lora, one rank: a projection merged at fp32")
            << Method::Lora << Precision::Fp32 << Sharding::Ddp << 1 << projection * 16;
        QTest::addRow("full, ZeRO-3 over 2: a unit gathered, and Gloo's copy")
            << Method::Full << Precision::Fp32 << Sharding::Zero3 << 2 << 2 * 4 * largestUnit(n);
        // bf16 weights into a float32 file: the largest parameter converted.
        QTest::addRow("bf16-mixed lora, one rank: the embedding converted to fp32")
            << Method::Lora << Precision::Bf16Mixed << Sharding::Ddp << 1
            << std::max(projection * 16, 4.0 * double(n.largestLayer));
        QTest::addRow("bf16-mixed full, one rank: written from the fp32 master")
            << Method::Full << Precision::Bf16Mixed << Sharding::Ddp << 1 << 0.0;
    }
    void exportPhase()
    {
        QFETCH(Method, method);
        QFETCH(Precision, precision);
        QFETCH(Sharding, sharding);
        QFETCH(int, ranks);
        QFETCH(double, extra);
        const plan::PlanResult r = plan::estimatePlan(
            runInput(method, precision, sharding, ranks), benchModel(), twoCoreCpu());
        QCOMPARE(phaseBytes(r, Phase::Export), persistentBytes(r) + extra);
    }

    // Disk: a checkpoint holds the master and both AdamW moments of every
    // trainable parameter (and LoRA's adapter); the export the merged
    // model in the checkpoint's dtype (and the adapter in fp32).
    void diskOfOurTrainer_data()
    {
        const double N = double(model::countParameters(benchModel()).total);
        QTest::addColumn<Method>("method");
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<QString>("torchDtype");
        QTest::addColumn<double>("checkpointPerTrainable"); // bytes per trainable parameter
        QTest::addColumn<double>("exportBytes"); // without the adapter
        QTest::addRow("full fp32, float32 file")
            << Method::Full << Precision::Fp32 << "float32" << 12.0 << 4 * N;
        QTest::addRow("full bf16-mixed, bfloat16 file")
            << Method::Full << Precision::Bf16Mixed << "bfloat16" << 12.0 << 2 * N;
        QTest::addRow("full pure bf16: a bf16 master")
            << Method::Full << Precision::Bf16 << "bfloat16" << 6.0 << 2 * N;
        QTest::addRow("lora, a preset without torch_dtype")
            << Method::Lora << Precision::Bf16Mixed << "" << 16.0 << 2 * N;
    }
    void diskOfOurTrainer()
    {
        QFETCH(Method, method);
        QFETCH(Precision, precision);
        QFETCH(QString, torchDtype);
        QFETCH(double, checkpointPerTrainable);
        QFETCH(double, exportBytes);
        model::ModelSpec spec = benchModel();
        spec.torchDtype = torchDtype.toStdString();
        const plan::PlanResult r =
            plan::estimatePlan(runInput(method, precision, Sharding::Ddp, 1), spec, twoCoreCpu());
        const double T = double(r.paramsTrainable);
        const double adapter = method == Method::Lora ? 4 * T : 0;
        QCOMPARE(r.checkpointDiskBytes, checkpointPerTrainable * T);
        QCOMPARE(r.exportDiskBytes, exportBytes + adapter);
        QVERIFY(!r.diskExplanation.empty());

        plan::PlanInput reference = runInput(method, precision, Sharding::Ddp, 1);
        reference.engine = plan::Engine::Reference;
        QCOMPARE(plan::estimatePlan(reference, spec, twoCoreCpu()).checkpointDiskBytes, 0.0);
    }

    // Ranks on GPUs read the model on the host: the node needs that many
    // copies while they load; on CPUs that memory is the load phase itself.
    void hostMemoryWhileLoading_data()
    {
        const model::ParameterCount n = model::countParameters(benchModel());
        const double N = double(n.total);
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<int>("gpus");
        QTest::addColumn<double>("bytes");
        QTest::addRow("DDP, 1 GPU: fp32 and bf16 copies") << Sharding::Ddp << 1 << 6 * N;
        QTest::addRow("DDP, 8 GPUs: a pair per rank") << Sharding::Ddp << 8 << 8 * 6 * N;
        // The bench model's config says float32: its slices are read at 4 B.
        QTest::addRow("FULL_SHARD, 8 GPUs: a slice's buffer per rank")
            << Sharding::FsdpFull << 8 << 8 * 4 * double(n.embedding) / 8;
    }
    void hostMemoryWhileLoading()
    {
        QFETCH(Sharding, sharding);
        QFETCH(int, gpus);
        QFETCH(double, bytes);
        plan::PlanInput in = runInput(Method::Full, Precision::Bf16Mixed, sharding, gpus);
        in.gpu = "H100-SXM";
        QCOMPARE(plan::estimatePlan(in, benchModel(), presetGpu("H100-SXM")).loadHostBytesPerNode,
            bytes);
        in.gpu = plan::kCpuDeviceId;
        QCOMPARE(plan::estimatePlan(in, benchModel(), twoCoreCpu()).loadHostBytesPerNode, 0.0);
    }

    // A VM whose RAM cannot hold what its ranks load does not fit, and the
    // plan says why: QLoRA of a 70 B model, DDP on 8 A100s, fits the GPUs.
    void hostMemoryDecidesTheFit()
    {
        plan::PlanInput in;
        in.model = "Llama-3.3-70B-Instruct";
        in.method = Method::Qlora;
        in.engine = plan::Engine::Tunebench;
        in.vmSize = "Standard_ND96amsr_A100_v4";
        in.gpusPerNode = 8;
        in.microBatch = 1;
        const plan::VmSize* vm = presetVm("Standard_ND96amsr_A100_v4");
        const plan::PlanResult r = plan::estimatePlan(
            in, presetModel("Llama-3.3-70B-Instruct"), presetGpu(vm->gpuId.c_str()), vm);
        QVERIFY(r.perGpuBytes <= r.usableBytes);
        QVERIFY(r.loadHostBytesPerNode > 0.9 * r.vmRamBytes);
        QVERIFY(!r.fits);
        QVERIFY(std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
            return w.find("loading the model needs") != std::string::npos;
        }));
    }
};

QTEST_GUILESS_MAIN(TestPhaseMemory)
#include "test_phase_memory.moc"
