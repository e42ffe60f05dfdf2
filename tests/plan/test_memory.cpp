#include "plan_fixture.h"

#include "model/parameter_count.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace tb;
using plan::MemoryCategory;
using plan::Offload;
using plan::Sharding;

Q_DECLARE_METATYPE(tb::plan::Sharding)
Q_DECLARE_METATYPE(tb::plan::Offload)

namespace {

// DeepSpeed's own estimator formulas (deepspeed/runtime/zero/stage_1_and_2.py
// estimate_zero2_model_states_mem_needs and stage3.py
// estimate_zero3_model_states_mem_needs, zero_init=True), GPU side.
double deepSpeedZero2(double params, int gpus, bool cpuOffload)
{
    if (cpuOffload)
        return 2 * params;
    return 4 * params + std::floor(16 * params / gpus);
}

double deepSpeedZero3(
    double params, double largestLayer, int gpus, bool offloadOptimizer, bool offloadParams)
{
    const double largestLayerMemory = 4 * largestLayer;
    if (offloadOptimizer && offloadParams)
        return largestLayerMemory;
    if (offloadOptimizer)
        return largestLayerMemory + std::floor(2 * params / gpus);
    return largestLayerMemory + std::floor(18 * params / gpus);
}

} // namespace

class TestMemory : public QObject {
    Q_OBJECT

private slots:
    void deepSpeedEstimator_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<int>("gpusPerNode");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<Offload>("offload");
        for (const char* model : {"Llama-3-8B", "Mistral-7B-v0.1", "Llama-2-70B", "Gemma-2-9B",
                 "SmolLM2-135M", "Mixtral-8x7B-v0.1"}) {
            for (const auto& [gpus, nodes] : {std::pair{1, 1}, {8, 1}, {8, 2}, {4, 4}}) {
                for (Offload offload : {Offload::None, Offload::Optimizer}) {
                    QTest::addRow("%s zero2 %dx%d %s", model, nodes, gpus,
                        offload == Offload::None ? "gpu" : "offload")
                        << model << Sharding::Zero2 << gpus << nodes << offload;
                }
                for (Offload offload :
                    {Offload::None, Offload::Optimizer, Offload::OptimizerAndParams})
                    QTest::addRow("%s zero3 %dx%d offload=%d", model, nodes, gpus, int(offload))
                        << model << Sharding::Zero3 << gpus << nodes << offload;
            }
        }
    }
    void deepSpeedEstimator()
    {
        QFETCH(QString, model);
        QFETCH(Sharding, sharding);
        QFETCH(int, gpusPerNode);
        QFETCH(int, nodes);
        QFETCH(Offload, offload);
        const model::ModelSpec& spec = presetModel(model.toUtf8().constData());
        plan::PlanInput in = fullInput(sharding, gpusPerNode, nodes);
        in.offload = offload;
        const plan::PlanResult r = plan::estimatePlan(in, spec, presetGpu("H100-SXM"), nullptr);
        const model::ParameterCount c = model::countParameters(spec);
        const double params = double(c.total);
        const int world = gpusPerNode * nodes;
        const double expected = sharding == Sharding::Zero2
            ? deepSpeedZero2(params, world, offload != Offload::None)
            : deepSpeedZero3(params, double(c.largestLayer), world, offload != Offload::None,
                offload == Offload::OptimizerAndParams);
        // DeepSpeed truncates to whole bytes; the planner keeps fractions.
        QVERIFY2(std::fabs(r.modelStatesBytes - expected) <= 1.0,
            qPrintable(QString("planner %1, DeepSpeed %2")
                           .arg(r.modelStatesBytes, 0, 'f', 0)
                           .arg(expected, 0, 'f', 0)));
    }

    void componentsSumToTotal_data()
    {
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<int>("method");
        for (Sharding s : {Sharding::Ddp, Sharding::Zero1, Sharding::Zero2, Sharding::Zero3,
                 Sharding::FsdpFull, Sharding::FsdpGradOp, Sharding::FsdpHybrid})
            for (int m = 0; m < 3; ++m)
                QTest::addRow("%s %d", std::string(plan::toString(s)).c_str(), m) << s << m;
    }
    void componentsSumToTotal()
    {
        QFETCH(Sharding, sharding);
        QFETCH(int, method);
        plan::PlanInput in = fullInput(sharding, 8, 2);
        in.method = plan::Method(method);
        const plan::PlanResult r = plan::estimatePlan(in, presetModel("Llama-3-8B"),
            presetGpu("A100-80GB-SXM"), presetVm("Standard_ND96amsr_A100_v4"));
        double sum = 0;
        double byCategory = 0;
        std::set<std::string> keys;
        for (const plan::MemoryComponent& c : r.memory) {
            sum += c.bytes;
            QVERIFY(c.bytes > 0);
            QVERIFY2(!c.explanation.empty(), c.key.c_str());
            QVERIFY2(!c.source.empty(), c.key.c_str());
            QVERIFY2(keys.insert(c.key).second, c.key.c_str()); // stable, unique keys
        }
        for (int c = 0; c < plan::kMemoryCategoryCount; ++c)
            byCategory += r.categoryBytes(MemoryCategory(c));
        QCOMPARE(sum, r.perGpuBytes);
        QVERIFY(std::fabs(byCategory - sum) < 1);
        QCOMPARE(r.headroomBytes, r.usableBytes - r.perGpuBytes);
        for (const char* key :
            {"activations", "logits", "cuda_context", "nccl_buffers", "allocator_slack"})
            QVERIFY2(r.component(key), key);
    }

    // The three peaks nest: allocated <= reserved <= device used = total, and
    // each step up is exactly the components that belong to it.
    void peaksNest_data()
    {
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<int>("gpus");
        QTest::addRow("ddp 1 GPU") << Sharding::Ddp << 1;
        QTest::addRow("zero3 8 GPUs") << Sharding::Zero3 << 8;
        QTest::addRow("fsdp 8 GPUs") << Sharding::FsdpFull << 8;
    }
    void peaksNest()
    {
        QFETCH(Sharding, sharding);
        QFETCH(int, gpus);
        plan::PlanInput in = fullInput(sharding, gpus, 1);
        const plan::PlanResult r =
            plan::estimatePlan(in, presetModel("Llama-3-8B"), presetGpu("H100-SXM"));
        const plan::PeakBytes& p = r.peaks;
        const double slack = r.component("allocator_slack")->bytes;
        const double context = r.component("cuda_context")->bytes;
        const plan::MemoryComponent* nccl = r.component("nccl_buffers");
        QCOMPARE(nccl != nullptr, gpus > 1);
        QVERIFY(p.allocated > 0);
        QVERIFY(std::fabs(p.reserved - p.allocated - slack) < 1);
        QVERIFY(std::fabs(p.deviceUsed - p.reserved - context - (nccl ? nccl->bytes : 0)) < 1);
        QCOMPARE(p.deviceUsed, r.perGpuBytes);
    }

    // A calibrated allocator overhead replaces the default fraction.
    void allocatorOverheadOverride()
    {
        plan::PlanInput in;
        const plan::PlanResult base =
            plan::estimatePlan(in, presetModel("Llama-3.1-8B"), presetGpu("A100-80GB-SXM"));
        in.allocatorOverhead = 0.10;
        const plan::PlanResult calibrated =
            plan::estimatePlan(in, presetModel("Llama-3.1-8B"), presetGpu("A100-80GB-SXM"));
        QCOMPARE(calibrated.peaks.allocated, base.peaks.allocated);
        QVERIFY(calibrated.peaks.reserved > base.peaks.reserved);
        QVERIFY(calibrated.component("allocator_slack")->explanation.find("calibrated")
            != std::string::npos);
    }

    // Memory grows with micro-batch and sequence length, and only through
    // the activation-sized parts.
    void growsWithBatchAndSequence_data()
    {
        QTest::addColumn<bool>("sequence");
        QTest::addRow("micro-batch") << false;
        QTest::addRow("sequence length") << true;
    }
    void growsWithBatchAndSequence()
    {
        QFETCH(bool, sequence);
        plan::PlanInput in;
        double previous = 0;
        double weights = -1;
        for (int step : {1, 2, 4, 8}) {
            (sequence ? in.seqLen : in.microBatch) = sequence ? 512 * step : step;
            const plan::PlanResult r =
                plan::estimatePlan(in, presetModel("Llama-3.1-8B"), presetGpu("A100-80GB-SXM"));
            QVERIFY(r.perGpuBytes > previous);
            QVERIFY(r.categoryBytes(MemoryCategory::Activations) > 0);
            if (weights >= 0)
                QCOMPARE(r.categoryBytes(MemoryCategory::Weights), weights);
            weights = r.categoryBytes(MemoryCategory::Weights);
            previous = r.perGpuBytes;
        }
    }

    void checkpointingAndAttention()
    {
        const model::ModelSpec& spec = presetModel("Llama-3-8B");
        const plan::GpuSpec& gpu = presetGpu("H100-SXM");
        plan::PlanInput in = fullInput(Sharding::Ddp, 1, 1);
        in.seqLen = 4096;
        const double ckpt =
            plan::estimatePlan(in, spec, gpu).categoryBytes(MemoryCategory::Activations);
        in.gradientCheckpointing = false;
        const double noCkpt =
            plan::estimatePlan(in, spec, gpu).categoryBytes(MemoryCategory::Activations);
        QVERIFY(noCkpt > 5 * ckpt);
        in.attention = plan::Attention::Eager;
        const plan::PlanResult eager = plan::estimatePlan(in, spec, gpu);
        QVERIFY(eager.component("attn_scores"));
        // Scores grow with the square of the sequence: 4x for twice the length.
        in.seqLen = 8192;
        const plan::PlanResult eager2 = plan::estimatePlan(in, spec, gpu);
        QCOMPARE(eager2.component("attn_scores")->bytes, 4 * eager.component("attn_scores")->bytes);
        // SDPA never stores them.
        in.attention = plan::Attention::Sdpa;
        QVERIFY(!plan::estimatePlan(in, spec, gpu).component("attn_scores"));
    }

    // Gemma 2 softcaps its scores: our trainer computes them eagerly, keeping
    // tanh's output too; the reference engines count what the user chose.
    void softcappedScoresAreEagerInOurTrainer()
    {
        const model::ModelSpec& spec = presetModel("Gemma-2-9B");
        QCOMPARE(spec.attnLogitSoftcap, 50.0);
        const plan::GpuSpec& gpu = presetGpu("H100-SXM");
        plan::PlanInput in = fullInput(Sharding::Ddp, 1, 1);
        in.seqLen = 1024;
        in.engine = plan::Engine::Tunebench;
        const plan::PlanResult ours = plan::estimatePlan(in, spec, gpu);
        const auto* scores = ours.component("attn_scores");
        QVERIFY(scores);
        // bf16: fp32 softmax (4 B), its bf16 copy (2 B), tanh's output (2 B).
        QCOMPARE(scores->bytes, 8.0 * 16 * 1024 * 1024 * in.microBatch);
        QVERIFY(scores->explanation.find("no fused kernel") != std::string::npos);
        in.engine = plan::Engine::Reference;
        QVERIFY(!plan::estimatePlan(in, spec, gpu).component("attn_scores"));
        in.attention = plan::Attention::Eager;
        QCOMPARE(plan::estimatePlan(in, spec, gpu).component("attn_scores")->bytes, scores->bytes);
    }

    // One GPU without accumulation: gradients are not resident at the
    // activation peak; with accumulation, or with more GPUs, they are.
    void gradientsAtThePeak_data()
    {
        QTest::addColumn<int>("gradAccum");
        QTest::addColumn<int>("gpus");
        QTest::addColumn<bool>("allResident");
        QTest::addRow("1 GPU, no accumulation") << 1 << 1 << false;
        QTest::addRow("1 GPU, accumulation 4") << 4 << 1 << true;
        QTest::addRow("2 GPUs, no accumulation") << 1 << 2 << true;
    }
    void gradientsAtThePeak()
    {
        QFETCH(int, gradAccum);
        QFETCH(int, gpus);
        QFETCH(bool, allResident);
        plan::PlanInput in = fullInput(Sharding::Ddp, gpus, 1);
        in.gradAccum = gradAccum;
        in.microBatch = 4;
        in.gradientCheckpointing = false;
        const model::ModelSpec& spec = presetModel("SmolLM2-360M");
        const plan::PlanResult r = plan::estimatePlan(in, spec, presetGpu("H100-SXM"));
        const double all = 2.0 * model::countParameters(spec).total; // bf16 gradients
        QCOMPARE(r.component("gradients")->bytes == all, allResident);
    }

    void lossModes()
    {
        const model::ModelSpec& spec = presetModel("Llama-3-8B"); // 128k vocabulary
        plan::PlanInput in;
        in.microBatch = 2;
        in.seqLen = 4096;
        const double tokensTimesVocab = 2.0 * 4096 * 128256;
        in.loss = plan::LossMode::FullFp32;
        const double full =
            plan::estimatePlan(in, spec, presetGpu("A100-80GB-SXM")).component("logits")->bytes;
        in.loss = plan::LossMode::Chunked;
        const double chunked =
            plan::estimatePlan(in, spec, presetGpu("A100-80GB-SXM")).component("logits")->bytes;
        in.loss = plan::LossMode::Fused;
        const double fused =
            plan::estimatePlan(in, spec, presetGpu("A100-80GB-SXM")).component("logits")->bytes;
        QCOMPARE(full, (2 + 12) * tokensTimesVocab);
        QCOMPARE(chunked, (2 + 4) * tokensTimesVocab + 8 * tokensTimesVocab / 8);
        QCOMPARE(fused, (2 + 4 + 4) * tokensTimesVocab / 8);
        QVERIFY(full > chunked && chunked > fused);
    }

    void methods()
    {
        const model::ModelSpec& spec = presetModel("Llama-3.1-8B");
        const plan::GpuSpec& gpu = presetGpu("A100-80GB-SXM");
        plan::PlanInput in = fullInput(Sharding::Ddp, 1, 1);
        const plan::PlanResult full = plan::estimatePlan(in, spec, gpu);
        in.method = plan::Method::Lora;
        const plan::PlanResult lora = plan::estimatePlan(in, spec, gpu);
        in.method = plan::Method::Qlora;
        const plan::PlanResult qlora = plan::estimatePlan(in, spec, gpu);
        // The 16 bytes/param of a full fine-tune (ZeRO paper).
        QCOMPARE(full.modelStatesBytes, 16.0 * double(full.paramsTotal));
        // LoRA r=16 on all seven projections of Llama-3-8B: 16 x (sum of in+out) x 32 layers.
        QCOMPARE(lora.paramsTrainable,
            qint64(16)
                * (4096 + 4096 + 2 * (4096 + 1024) + 4096 + 4096 + 2 * (4096 + 14336) + 14336
                    + 4096)
                * 32);
        QVERIFY(lora.perGpuBytes < full.perGpuBytes / 3);
        QVERIFY(qlora.categoryBytes(MemoryCategory::Weights)
            < lora.categoryBytes(MemoryCategory::Weights) / 2.5);
        const plan::MemoryComponent* constants = qlora.component("quant_constants");
        QVERIFY(constants);
        // Double quantisation: 0.127 bits per quantised parameter (QLoRA paper).
        const double quantised = double(model::countParameters(spec).blockLinear);
        QVERIFY(std::fabs(constants->bytes * 8 / quantised - 0.127) < 0.001);
    }

    // NF4's constants per quantised weight (QLoRA Sec. 2): an fp32 absmax per
    // 64 is 0.5 bits; quantised again, 8 bits per 64 plus an fp32 scale per
    // 256 blocks, 0.127. Under FSDP they stay whole on every GPU (4.2).
    void quantizationConstants_data()
    {
        QTest::addColumn<bool>("doubleQuant");
        QTest::addColumn<int>("gpus");
        QTest::addColumn<double>("bitsPerWeight");
        QTest::addColumn<QString>("said");
        QTest::newRow("double, 1 GPU") << true << 1 << 8 * (1.0 / 64 + 4.0 / 16384) << "0.127";
        QTest::newRow("single, 1 GPU") << false << 1 << 0.5 << "no double quantization";
        QTest::newRow("single, FSDP 8 GPUs") << false << 8 << 0.5 << "whole on every GPU";
    }
    void quantizationConstants()
    {
        QFETCH(bool, doubleQuant);
        QFETCH(int, gpus);
        QFETCH(double, bitsPerWeight);
        QFETCH(QString, said);
        const model::ModelSpec& spec = presetModel("Llama-3.1-8B");
        plan::PlanInput in = fullInput(gpus > 1 ? Sharding::FsdpFull : Sharding::Ddp, gpus, 1);
        in.method = plan::Method::Qlora;
        in.doubleQuant = doubleQuant;
        const plan::PlanResult r = plan::estimatePlan(in, spec, presetGpu("A100-80GB-SXM"));
        const plan::MemoryComponent* constants = r.component("quant_constants");
        QVERIFY(constants);
        const double quantised = double(model::countParameters(spec).blockLinear);
        QCOMPARE(constants->bytes * 8 / quantised, bitsPerWeight);
        QVERIFY2(QString::fromStdString(constants->explanation).contains(said),
            constants->explanation.c_str());
    }

    // Our trainer always double-quantises; a plan of it without is refused,
    // naming the field, not planned as something the run would not do.
    void ourTrainerRefusesSingleQuantization()
    {
        plan::PlanInput in = fullInput(Sharding::Ddp, 1, 1);
        in.method = plan::Method::Qlora;
        in.doubleQuant = false;
        QVERIFY(plan::validatePlanInput(in).ok());
        in.engine = plan::Engine::Tunebench;
        const common::Status refused = plan::validatePlanInput(in);
        QVERIFY(!refused.ok());
        QVERIFY2(
            refused.error().message.find("double_quant: false, expected true with engine tunebench")
                != std::string::npos,
            refused.error().message.c_str());
    }

    void mixtureOfExpertsMethods()
    {
        const model::ModelSpec& spec = presetModel("Mixtral-8x7B-v0.1");
        const model::ParameterCount count = model::countParameters(spec);
        const plan::GpuSpec& gpu = presetGpu("A100-80GB-SXM");
        plan::PlanInput in = fullInput(Sharding::Zero3, 8, 1);
        const plan::PlanResult full = plan::estimatePlan(in, spec, gpu);
        QCOMPARE(full.paramsTotal, qint64(46'702'792'704));
        in.method = plan::Method::Lora;
        const plan::PlanResult lora = plan::estimatePlan(in, spec, gpu);
        // r=16 on q, k, v, o of 32 layers; the default targets' MLP names select experts.
        QCOMPARE(lora.paramsTrainable, qint64(16) * (2 * (4096 + 4096) + 2 * (4096 + 1024)) * 32);
        QVERIFY(std::any_of(lora.warnings.begin(), lora.warnings.end(), [](const std::string& w) {
            return w.find("experts are not adapted") != std::string::npos;
        }));
        QVERIFY(std::none_of(full.warnings.begin(), full.warnings.end(),
            [](const std::string& w) { return w.find("experts") != std::string::npos; }));
        in = fullInput(Sharding::Ddp, 1, 1);
        in.method = plan::Method::Qlora;
        const plan::PlanResult qlora = plan::estimatePlan(in, spec, gpu);
        const plan::MemoryComponent* constants = qlora.component("quant_constants");
        QVERIFY(constants);
        const double quantised = double(count.blockLinear - count.routerPerLayer * spec.numLayers);
        QVERIFY(std::fabs(constants->bytes * 8 / quantised - 0.127) < 0.001);
    }

    // Mixtral is Mistral-7B with each MLP made 8 experts of the same width,
    // 2 a token: a full fine-tune's layer keeps, beyond Mistral's, a second
    // expert's gate, SiLU, up and down inputs (4 a t f), both experts'
    // gathered inputs and weighted outputs (4 a t h) and the router's fp32
    // softmax (4 t E), docs/PLANNER.md 4.3.
    void expertActivationsBeyondTheDenseModel()
    {
        const plan::GpuSpec& gpu = presetGpu("A100-80GB-SXM");
        plan::PlanInput in = fullInput(Sharding::Ddp, 1, 1);
        in.gradientCheckpointing = false;
        in.seqLen = 2048;
        const double moe = plan::estimatePlan(in, presetModel("Mixtral-8x7B-v0.1"), gpu)
                               .categoryBytes(MemoryCategory::Activations);
        const double dense = plan::estimatePlan(in, presetModel("Mistral-7B-v0.1"), gpu)
                                 .categoryBytes(MemoryCategory::Activations);
        const double a = 2, t = 2048, f = 14336, h = 4096;
        QCOMPARE(moe - dense, 32 * (4 * a * t * f + 4 * a * t * h + 4 * t * 8));
    }

    void verdictAgainstUsableMemory()
    {
        // Llama-3-8B full on 2 x A100 40GB with FSDP: 16 bytes x 8.03 B / 2 = 59.8 GiB of states
        // alone.
        plan::PlanInput in = fullInput(Sharding::FsdpFull, 2, 1);
        const plan::PlanResult r = plan::estimatePlan(in, presetModel("Llama-3-8B"),
            presetGpu("A100-40GB-SXM"), presetVm("Standard_ND96asr_v4"));
        QVERIFY(!r.fits);
        QVERIFY(r.headroomBytes < 0);
        QCOMPARE(r.usableBytes, 39.50 * 1024 * 1024 * 1024);
        // The same on 8 GPUs fits.
        QVERIFY(plan::estimatePlan(fullInput(Sharding::FsdpFull, 8, 1), presetModel("Llama-3-8B"),
            presetGpu("A100-40GB-SXM"), presetVm("Standard_ND96asr_v4"))
                    .fits);
    }

    void largestMicroBatchAndSweep()
    {
        plan::PlanInput in;
        const model::ModelSpec& spec = presetModel("Llama-3.1-8B");
        const plan::GpuSpec& gpu = presetGpu("A100-80GB-PCIe");
        const std::optional<int> largest =
            plan::largestFittingMicroBatch(in, spec, gpu, nullptr, 1024);
        QVERIFY(largest.has_value());
        in.microBatch = *largest;
        QVERIFY(plan::estimatePlan(in, spec, gpu).fits);
        in.microBatch = *largest + 1;
        QVERIFY(!plan::estimatePlan(in, spec, gpu).fits);
        const auto points = plan::sweepPlan(
            in, spec, gpu, nullptr, plan::SweepAxis::MicroBatch, {1, 2, 4, 8, 16, 32});
        QCOMPARE(points.size(), size_t(6));
        for (size_t i = 1; i < points.size(); ++i) {
            QVERIFY(points[i].perGpuBytes > points[i - 1].perGpuBytes);
            QVERIFY(points[i].tokensPerSecond > 0);
        }
        // 70B on one A100: not even micro-batch 1.
        QVERIFY(!plan::largestFittingMicroBatch(in, presetModel("Llama-2-70B"), gpu, nullptr)
                     .has_value());
    }

    void gpuCountSweepFollowsTheVm()
    {
        plan::PlanInput in = fullInput(Sharding::FsdpFull, 8, 1);
        const auto points = plan::sweepPlan(in, presetModel("Llama-3-8B"),
            presetGpu("A100-80GB-SXM"), presetVm("Standard_ND96amsr_A100_v4"),
            plan::SweepAxis::GpuCount, {1, 2, 4, 8, 12, 16, 32});
        // 12 is not a whole number of 8-GPU nodes: skipped.
        QCOMPARE(points.size(), size_t(6));
        QCOMPARE(points.back().value, 32LL);
        QVERIFY(points.back().perGpuBytes < points.front().perGpuBytes);
    }
};

QTEST_GUILESS_MAIN(TestMemory)
#include "test_memory.moc"
