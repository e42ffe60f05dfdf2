// What sharding and offload leave on each GPU and move to the host: ZeRO and
// FSDP against DDP, offloaded states, DDP's bucket copy, and QLoRA's
// quantization constants, which the reference engines' sharding never splits.
#include "plan_fixture.h"

#include "model/parameter_count.h"

#include <cmath>

using namespace tb;
using plan::MemoryCategory;
using plan::Offload;
using plan::Sharding;

Q_DECLARE_METATYPE(tb::plan::Sharding)
Q_DECLARE_METATYPE(tb::plan::Offload)
Q_DECLARE_METATYPE(tb::plan::Engine)

class TestShardingMemory : public QObject {
    Q_OBJECT

private slots:
    // bitsandbytes keeps QLoRA's constants in each layer's quant_state, no
    // parameter: FSDP and ZeRO-3 neither shard nor offload them, so under
    // the reference engine every GPU holds them whole; our trainer shards
    // them with the NF4 codes (docs/PLANNER.md 4.2).
    void quantConstantsWholeUnderReferenceSharding_data()
    {
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<Offload>("offload");
        QTest::addColumn<plan::Engine>("engine");
        QTest::addColumn<double>("divisor");
        QTest::newRow("fsdp") << Sharding::FsdpFull << Offload::None << plan::Engine::Reference
                              << 1.0;
        QTest::newRow("fsdp, parameter offload")
            << Sharding::FsdpFull << Offload::OptimizerAndParams << plan::Engine::Reference << 1.0;
        QTest::newRow("zero3") << Sharding::Zero3 << Offload::None << plan::Engine::Reference
                               << 1.0;
        QTest::newRow("zero3, parameter offload")
            << Sharding::Zero3 << Offload::OptimizerAndParams << plan::Engine::Reference << 1.0;
        QTest::newRow("ddp") << Sharding::Ddp << Offload::None << plan::Engine::Reference << 1.0;
        QTest::newRow("fsdp, our trainer")
            << Sharding::FsdpFull << Offload::None << plan::Engine::Tunebench << 4.0;
        QTest::newRow("zero3, our trainer")
            << Sharding::Zero3 << Offload::None << plan::Engine::Tunebench << 4.0;
    }
    void quantConstantsWholeUnderReferenceSharding()
    {
        QFETCH(Sharding, sharding);
        QFETCH(Offload, offload);
        QFETCH(plan::Engine, engine);
        QFETCH(double, divisor);
        const model::ModelSpec& spec = presetModel("Llama-2-70B");
        plan::PlanInput in = fullInput(sharding, 4, 1);
        in.method = plan::Method::Qlora;
        in.offload = offload;
        in.engine = engine;
        const plan::PlanResult r = plan::estimatePlan(in, spec, presetGpu("A100-80GB-SXM"));
        const plan::MemoryComponent* constants = r.component("quant_constants");
        QVERIFY(constants);
        const double quantised = double(model::countParameters(spec).blockLinear);
        QCOMPARE(constants->bytes, quantised * (1.0 / 64 + 4.0 / (64 * 256)) / divisor);
    }

    // A mixture of experts holds every expert (its states count the total),
    // adapts attention only under LoRA, and quantises every expert but not
    // the router under QLoRA.
    void shardingReducesPerGpuMemory()
    {
        const model::ModelSpec& spec = presetModel("Llama-2-70B");
        const plan::VmSize* vm = presetVm("Standard_ND96isr_H100_v5");
        const plan::GpuSpec& gpu = presetGpu("H100-SXM");
        double previous = INFINITY;
        for (int nodes : {1, 2, 4, 8}) {
            const plan::PlanResult r =
                plan::estimatePlan(fullInput(Sharding::FsdpFull, 8, nodes), spec, gpu, vm);
            QVERIFY(r.modelStatesBytes < previous);
            previous = r.modelStatesBytes;
        }
        // Hybrid shards only inside the node: more nodes do not help it.
        const double hybrid2 =
            plan::estimatePlan(fullInput(Sharding::FsdpHybrid, 8, 2), spec, gpu, vm)
                .modelStatesBytes;
        const double hybrid4 =
            plan::estimatePlan(fullInput(Sharding::FsdpHybrid, 8, 4), spec, gpu, vm)
                .modelStatesBytes;
        QCOMPARE(hybrid2, hybrid4);
        // DDP replicates everything: 16 bytes per parameter on every GPU.
        QCOMPARE(plan::estimatePlan(fullInput(Sharding::Ddp, 8, 4), spec, gpu, vm).modelStatesBytes,
            16.0 * 68'976'648'192.0);
    }

    void offloadMovesStatesToCpu()
    {
        const model::ModelSpec& spec = presetModel("Llama-3-8B");
        const plan::VmSize* vm = presetVm("Standard_ND96asr_v4");
        plan::PlanInput in = fullInput(Sharding::Zero3, 8, 1);
        const plan::PlanResult onGpu = plan::estimatePlan(in, spec, presetGpu("A100-40GB-SXM"), vm);
        in.offload = Offload::OptimizerAndParams;
        const plan::PlanResult offloaded =
            plan::estimatePlan(in, spec, presetGpu("A100-40GB-SXM"), vm);
        QCOMPARE(onGpu.cpuBytesPerNode, 0.0);
        QVERIFY(offloaded.cpuBytesPerNode > 0);
        QVERIFY(!offloaded.cpuExplanation.empty());
        QVERIFY(offloaded.perGpuBytes < onGpu.perGpuBytes);
        QVERIFY(offloaded.figure("offload_seconds"));
        QVERIFY(offloaded.stepSeconds > onGpu.stepSeconds);
    }

    // DDP with optimizer offload (Tunebench's trainer): the 16-bit weights
    // and gradients stay on every GPU (2 + 2 bytes per parameter of the 16
    // that bf16-mixed DDP holds); each rank keeps a whole fp32 master, master
    // gradient and AdamW moments (4 + 4 + 8 bytes) in pinned host memory.
    void ddpOffloadKeepsWholeStatesOnTheHost()
    {
        const model::ModelSpec& spec = presetModel("Llama-3-8B");
        const plan::VmSize* vm = presetVm("Standard_ND96asr_v4");
        const plan::GpuSpec& gpu = presetGpu("A100-80GB-SXM");
        plan::PlanInput in = fullInput(Sharding::Ddp, 8, 1);
        const plan::PlanResult onGpu = plan::estimatePlan(in, spec, gpu, vm);
        in.offload = Offload::Optimizer;
        const plan::PlanResult offloaded = plan::estimatePlan(in, spec, gpu, vm);
        QVERIFY(plan::validatePlanInput(in).ok()); // the rule book allows it
        const double params = onGpu.modelStatesBytes / 16.0;
        QCOMPARE(offloaded.modelStatesBytes, 4.0 * params);
        QVERIFY(!offloaded.component("optimizer"));
        QVERIFY(offloaded.cpuBytesPerNode >= 8 * 16.0 * params);
        QVERIFY(offloaded.cpuBytesPerNode < 8 * 2 * 16.0 * params); // pinned blocks round up
        QVERIFY(!offloaded.cpuExplanation.empty());
        QVERIFY(offloaded.figure("offload_seconds"));
    }

    // How the framework accumulates and wraps decides FSDP's gradients
    // (docs/PLANNER.md 4.17): sharded after each micro-batch's
    // reduce-scatter, or unsharded on every GPU under no_sync; the
    // adapters' own, or their whole layer's when they share its unit.
    void fsdpGradientsFollowTheFrameworksAccumulation_data()
    {
        QTest::addColumn<bool>("full");
        QTest::addColumn<bool>("noSync");
        QTest::addColumn<bool>("inLayerUnits");
        QTest::addColumn<int>("gradAccum");
        QTest::addColumn<bool>("whole"); // held unsharded
        QTest::addColumn<bool>("covered"); // the frozen layer weights have gradients too
        QTest::addRow("LoRA, reduce-scatter") << false << false << false << 8 << false << false;
        QTest::addRow("LoRA, no_sync") << false << true << false << 8 << true << false;
        QTest::addRow("LoRA, no_sync without accumulation")
            << false << true << false << 1 << false << false;
        QTest::addRow("LoRA in layer units") << false << false << true << 8 << false << true;
        QTest::addRow("LoRA in layer units, no_sync (lit-gpt)")
            << false << true << true << 8 << true << true;
        QTest::addRow("full, no_sync") << true << true << false << 8 << true << false;
    }
    void fsdpGradientsFollowTheFrameworksAccumulation()
    {
        QFETCH(bool, full);
        QFETCH(bool, noSync);
        QFETCH(bool, inLayerUnits);
        QFETCH(int, gradAccum);
        QFETCH(bool, whole);
        QFETCH(bool, covered);
        const model::ModelSpec& spec = presetModel("Llama-2-7B");
        const plan::GpuSpec& gpu = presetGpu("A100-80GB-SXM");
        plan::PlanInput in = fullInput(Sharding::FsdpFull, 2, 1);
        in.method = full ? plan::Method::Full : plan::Method::Lora;
        in.precision = plan::Precision::Bf16;
        in.gradAccum = gradAccum;
        const double reduceScattered =
            plan::estimatePlan(in, spec, gpu).component("gradients")->bytes;
        in.fsdp.noSync = noSync;
        in.fsdp.adaptersInLayerUnits = inLayerUnits;
        QVERIFY(plan::validatePlanInput(in).ok());
        const plan::PlanResult r = plan::estimatePlan(in, spec, gpu);
        const model::ParameterCount counts = model::countParameters(spec);
        const double frozenLayers = covered ? 2.0 * double(counts.layers) : 0;
        const double gpus = 2;
        const double expected = (frozenLayers + reduceScattered * gpus) / (whole ? 1 : gpus);
        QCOMPARE(r.component("gradients")->bytes, expected);
        QVERIFY(!r.component("gradients")->explanation.empty());
    }

    void fsdpGradientSettingsThatCannotApplyAreRefused_data()
    {
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<plan::Engine>("engine");
        QTest::addColumn<bool>("full");
        QTest::addColumn<QString>("message");
        QTest::addRow("ZeRO-3") << Sharding::Zero3 << plan::Engine::Reference << false
                                << "fsdp.no_sync: true, expected false with sharding zero3";
        QTest::addRow("our trainer")
            << Sharding::FsdpFull << plan::Engine::Tunebench << false
            << "fsdp.adapters_in_layer_units: true, expected false with engine tunebench";
        QTest::addRow("a full fine-tune")
            << Sharding::FsdpFull << plan::Engine::Reference << true
            << "fsdp.adapters_in_layer_units: true, expected false with method full";
    }
    void fsdpGradientSettingsThatCannotApplyAreRefused()
    {
        QFETCH(Sharding, sharding);
        QFETCH(plan::Engine, engine);
        QFETCH(bool, full);
        QFETCH(QString, message);
        plan::PlanInput in = fullInput(sharding, 2, 1);
        in.method = full ? plan::Method::Full : plan::Method::Lora;
        in.engine = engine;
        in.gradAccum = 4;
        in.fsdp.noSync = true;
        in.fsdp.adaptersInLayerUnits = true;
        const common::Status valid = plan::validatePlanInput(in);
        QVERIFY(!valid);
        QVERIFY2(QString::fromStdString(valid.error().message).contains(message),
            valid.error().message.c_str());
    }

    void ddpBucketCopy()
    {
        plan::PlanInput in = fullInput(Sharding::Ddp, 8, 1);
        const model::ModelSpec& spec = presetModel("SmolLM2-360M");
        QVERIFY(
            !plan::estimatePlan(in, spec, presetGpu("A100-80GB-SXM")).component("comm_buckets"));
        in.ddpBucketView = false;
        const plan::PlanResult r = plan::estimatePlan(in, spec, presetGpu("A100-80GB-SXM"));
        QVERIFY(r.component("comm_buckets"));
        QCOMPARE(r.component("comm_buckets")->bytes, r.component("gradients")->bytes);
    }
};

QTEST_GUILESS_MAIN(TestShardingMemory)
#include "test_sharding_memory.moc"
