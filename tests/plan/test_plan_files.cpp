#include "../support/test_paths.h"
#include "plan_fixture.h"

#include "common/atomic_file.h"
#include "plan/plan_file.h"

#include <filesystem>

using namespace tb;
using plan::Offload;
using plan::Precision;
using plan::Sharding;

Q_DECLARE_METATYPE(tb::plan::Sharding)
Q_DECLARE_METATYPE(tb::plan::Offload)
Q_DECLARE_METATYPE(tb::plan::Precision)

class TestPlanFiles : public QObject {
    Q_OBJECT

private slots:
    void catalogLookups()
    {
        const plan::Catalog& c = presetCatalog();
        QVERIFY(c.models().size() >= 18);
        QCOMPARE(c.vms().size(), size_t(38));
        QVERIFY(c.findModel("llama-3-8b") == c.findModel("meta-llama/Meta-Llama-3-8B"));
        QVERIFY(c.findModel("LLAMA-3-8B"));
        QVERIFY(!c.findModel("llama-3-9b"));
        QCOMPARE(c.suggestModels("llama-3-9b").front(), std::string("Llama-3-8B"));
        QVERIFY(c.findVm("ND96asr_v4") == c.findVm("standard_nd96asr_v4"));
        QCOMPARE(c.findVm("Standard_ND96amsr_A100_v4")->gpusPerVm, 8);
        // The software stack and host architecture are typed, not prose.
        QVERIFY(c.findVm("Standard_ND96isr_MI300X_v5")->rocm);
        QVERIFY(c.findVm("Standard_ND128isr_NDR_GB200_v6")->arm64Host);
        QVERIFY(!c.findVm("Standard_ND96amsr_A100_v4")->rocm);
        QVERIFY(!c.findVm("Standard_ND96amsr_A100_v4")->arm64Host);
        QCOMPARE(c.findGpu("a100")->id, std::string("A100-80GB-SXM"));
        // What a CUDA run reports finds its preset; a GPU without one, none.
        QCOMPARE(c.findGpuByDeviceName("NVIDIA H100 80GB HBM3")->id, std::string("H100-SXM"));
        QCOMPARE(
            c.findGpuByDeviceName(" nvidia a100-sxm4-80gb ")->id, std::string("A100-80GB-SXM"));
        QCOMPARE(c.findGpuByDeviceName("Tesla T4")->id, std::string("T4"));
        QVERIFY(!c.findGpuByDeviceName("NVIDIA GeForce RTX 4090"));
        QVERIFY(!c.findGpuByDeviceName("H100-SXM")); // an id is not a device name
        for (const plan::VmSize& vm : c.vms()) {
            QVERIFY2(c.findGpu(vm.gpuId), vm.name.c_str());
            QVERIFY2(!vm.sources.empty(), vm.name.c_str());
            QVERIFY2(!vm.priceSource.empty(), vm.name.c_str());
        }
        for (const plan::GpuSpec& gpu : c.gpus()) {
            QVERIFY2(!gpu.sources.empty(), gpu.id.c_str());
            QVERIFY2(gpu.usableGiB <= gpu.memoryGiB, gpu.id.c_str());
        }
        const auto unknown = c.resolveModel("llama-3-9b");
        QVERIFY(!unknown.ok());
        QVERIFY(QString::fromStdString(unknown.error().hint).contains("Llama-3-8B"));
    }

    void defaultPresetsDirFindsTheSourceTree()
    {
        qputenv("TUNEBENCH_PRESETS_DIR", "");
        const std::string dir = plan::defaultPresetsDir();
        QVERIFY(!dir.empty());
        QVERIFY(std::filesystem::exists(dir + "/hardware/vms.yaml"));
        qputenv("TUNEBENCH_PRESETS_DIR", "/nonexistent/presets");
        QCOMPARE(plan::defaultPresetsDir(), std::string("/nonexistent/presets"));
        QVERIFY(!plan::Catalog::loadDefault().ok());
        qunsetenv("TUNEBENCH_PRESETS_DIR");
    }

    void hardwarePresetErrors_data()
    {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("replacement");
        QTest::addColumn<QString>("expected");
        QTest::addRow("unknown key") << "    bf16: false\n"
                                     << "    bf16: false\n    bf16_speed: 3\n"
                                     << "bf16_speed: unknown key";
        QTest::addRow("duplicate key") << "    bf16: false\n"
                                       << "    bf16: false\n    bf16: true\n"
                                       << "gpus[0].bf16: duplicate key (first given on line 29)";
        QTest::addRow("bad number")
            << "    fp16_tflops: 65\n"
            << "    fp16_tflops: fast\n"
            << "gpus.yaml:31:18: gpus[0].fp16_tflops: got fast, expected a number from 0 to 1e+06";
        QTest::addRow("duplicate id") << "  - id: V100-16GB\n"
                                      << "  - id: T4\n"
                                      << "names two GPUs";
        QTest::addRow("duplicate device name") << "device_names: [\"Tesla V100-PCIE-16GB\"]"
                                               << "device_names: [\"Tesla T4\"]"
                                               << "gpus[1].device_names: 'Tesla T4' names two GPUs";
    }
    void hardwarePresetErrors()
    {
        QFETCH(QString, edit);
        QFETCH(QString, replacement);
        QFETCH(QString, expected);
        std::string text = *common::readFile(tb::test::sourcePath("presets/hardware/gpus.yaml"));
        const size_t at = text.find(edit.toStdString());
        QVERIFY(at != std::string::npos);
        text.replace(at, size_t(edit.size()), replacement.toStdString());
        const auto gpus = plan::parseGpuPresets(text, "gpus.yaml");
        QVERIFY(!gpus.ok());
        QVERIFY2(QString::fromStdString(gpus.error().message).contains(expected),
            gpus.error().message.c_str());
    }

    void vmNamesAnUnknownGpu()
    {
        std::string text = *common::readFile(tb::test::sourcePath("presets/hardware/vms.yaml"));
        text.replace(text.find("    gpu: T4\n"), 12, "    gpu: T5\n");
        const auto vms = plan::parseVmPresets(text, "vms.yaml", presetCatalog().gpus());
        QVERIFY(!vms.ok());
        QVERIFY(QString::fromStdString(vms.error().message).contains("'T5' is not a GPU"));
    }

    void planYamlRoundTrip_data()
    {
        QTest::addColumn<int>("variant");
        for (int i = 0; i < 4; ++i)
            QTest::addRow("variant %d", i) << i;
    }
    void planYamlRoundTrip()
    {
        QFETCH(int, variant);
        plan::PlanInput in;
        if (variant == 1) {
            in.model = "/models/my model: v2/config.json";
            in.method = plan::Method::Qlora;
            in.lora = {64, 16.5, 0.1, {"q_proj", "v_proj"}, {}};
            in.objective = plan::Objective::Dpo;
            in.sharding = Sharding::FsdpHybrid;
            in.offload = Offload::OptimizerAndParams;
            in.nodes = 4;
        } else if (variant == 2) {
            in.method = plan::Method::Full;
            in.precision = Precision::Fp32;
            in.optimizer = plan::Optimizer::Adafactor;
            in.attention = plan::Attention::Eager;
            in.loss = plan::LossMode::FullFp32;
            in.gradientCheckpointing = false;
            in.vmSize.clear();
            in.gpu = "H100";
            in.datasetTokens = 123456789;
            in.epochs = 0.5;
            in.packing = false;
            in.utilisationOverride = 0.31;
            in.cudaContextGiB = 0.75;
        } else if (variant == 3) {
            in.model = "true"; // a name YAML would read as a boolean
            in.sharding = Sharding::Zero2;
            in.offload = Offload::Optimizer;
            in.ddpBucketView = false;
            in.deepspeed.reduceBucketSize = 0; // "auto"
            in.deepspeed.overlapComm = true;
            in.deepspeed.pinMemory = true;
            in.deepspeed.maxLiveParameters = 3e8;
            in.fsdp.backwardPrefetch = plan::BackwardPrefetch::None;
            in.fsdp.limitAllGathers = false;
        }
        const auto again = plan::parsePlanYaml(plan::planToYaml(in), "round.yaml");
        QVERIFY2(again.ok(), again.ok() ? "" : again.error().message.c_str());
        QCOMPARE(plan::planToYaml(*again), plan::planToYaml(in));
        QCOMPARE(again->model, in.model);
        QCOMPARE(again->lora.alpha, in.lora.alpha);
        QCOMPARE(again->lora.dropout, in.lora.dropout);
        QCOMPARE(again->epochs, in.epochs);
        QCOMPARE(again->lora.targetModules, in.lora.targetModules);
        QCOMPARE(again->deepspeed.overlapComm, in.deepspeed.overlapComm);
        QCOMPARE(again->deepspeed.maxLiveParameters, in.deepspeed.maxLiveParameters);
        QCOMPARE(int(again->fsdp.backwardPrefetch), int(in.fsdp.backwardPrefetch));
        QCOMPARE(int(again->objective), int(in.objective));
    }

    void planYamlErrorsListEveryProblem()
    {
        const char* yaml = "model: Llama-3-8B\nmethod: lorra\nmicro_batch: -3\nlora:\n  rank: 0\n  "
                           "ranks: 4\nnodes: 2\nnodes: 3\n";
        const auto in = plan::parsePlanYaml(yaml, "p.yaml");
        QVERIFY(!in.ok());
        const QString m = QString::fromStdString(in.error().message);
        for (const char* part : {"p.yaml: 5 problems",
                 "p.yaml:2:9: method: got lorra, expected full, lora or qlora (did you mean lora?)",
                 "p.yaml:3:14: micro_batch: got -3", "p.yaml:5:9: lora.rank: got 0",
                 "p.yaml:6:3: lora.ranks: unknown key", "p.yaml:8:1: nodes: duplicate key"})
            QVERIFY2(m.contains(part), qPrintable(m));
        const auto combo = plan::parsePlanYaml("model: x\noffload: optimizer+params\n", "c.yaml");
        QVERIFY(!combo.ok());
        QVERIFY(QString::fromStdString(combo.error().message)
                    .contains("which keeps every parameter on every rank"));
    }

    void atomicSave()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("plan.yaml").toStdString();
        QVERIFY(common::writeFileAtomic(path, "old").ok());
        plan::PlanInput in;
        in.nodes = 3;
        QVERIFY(plan::savePlanYaml(path, in).ok());
        QCOMPARE(plan::loadPlanYaml(path)->nodes, 3);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1); // no temporary left behind
        QVERIFY(!plan::savePlanYaml("/nonexistent/dir/plan.yaml", in).ok());
    }

    // Settings that size buffers are read and change the plan's memory the
    // way DeepSpeed's docs say.
    void deepSpeedBuffers_data()
    {
        QTest::addColumn<QString>("zero");
        QTest::addColumn<QString>("component");
        QTest::addColumn<double>("elements"); // expected, times the 2-byte working copy
        const double T = 8'030'261'248.0; // Llama-3.1-8B, full fine-tune
        QTest::addRow("zero2 reduce bucket") << R"({"stage": 2, "reduce_bucket_size": 2e8})"
                                             << "comm_buckets" << 2e8;
        QTest::addRow("zero2 overlap_comm: 4.5x both buckets")
            << R"({"stage": 2, "overlap_comm": true, "reduce_bucket_size": 1e8, "allgather_bucket_size": 3e8})"
            << "comm_buckets" << 4.5 * 4e8;
        QTest::addRow("zero2 auto: h^2") << R"({"stage": 2, "reduce_bucket_size": "auto"})"
                                         << "comm_buckets" << 4096.0 * 4096;
        QTest::addRow("zero2 no contiguous gradients")
            << R"({"stage": 2, "contiguous_gradients": false})"
            << "comm_buckets" << 0.0;
        QTest::addRow("zero3 prefetch + reduce")
            << R"({"stage": 3, "stage3_prefetch_bucket_size": 1e8, "reduce_bucket_size": 1e8})"
            << "comm_buckets" << 2e8;
        QTest::addRow("zero3 live parameters")
            << R"({"stage": 3, "stage3_max_live_parameters": 2e9})"
            << "live_parameters" << 2e9 - 128256.0 * 4096;
        QTest::addRow("zero3 live parameters above the model")
            << R"({"stage": 3, "stage3_max_live_parameters": 1e11})"
            << "live_parameters" << T - 128256.0 * 4096;
    }
    void deepSpeedBuffers()
    {
        QFETCH(QString, zero);
        QFETCH(QString, component);
        QFETCH(double, elements);
        const QString json =
            QStringLiteral(R"({"bf16": {"enabled": true}, "zero_optimization": %1})").arg(zero);
        plan::PlanInput base = fullInput(Sharding::Ddp, 8, 1);
        const auto imported = plan::parseDeepSpeedJson(json.toStdString(), "ds.json", base);
        QVERIFY2(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
        const plan::PlanResult r =
            plan::estimatePlan(imported->input, presetModel("Llama-3.1-8B"), presetGpu("H100-SXM"));
        const plan::MemoryComponent* c = r.component(component.toStdString());
        QCOMPARE(c ? c->bytes : 0.0, 2 * elements);
    }

    // Pinned offload buffers are rounded up to a power of two on the host.
    void pinnedOffload()
    {
        plan::PlanInput in = fullInput(Sharding::Zero2, 8, 1);
        in.offload = Offload::Optimizer;
        const auto plain =
            plan::estimatePlan(in, presetModel("Llama-3.1-8B"), presetGpu("H100-SXM"));
        in.deepspeed.pinMemory = true;
        const auto pinned =
            plan::estimatePlan(in, presetModel("Llama-3.1-8B"), presetGpu("H100-SXM"));
        QVERIFY(pinned.cpuBytesPerNode > plain.cpuBytesPerNode);
        QVERIFY(pinned.cpuBytesPerNode < 2 * plain.cpuBytesPerNode);
    }

    void fsdpPrefetch_data()
    {
        QTest::addColumn<QString>("settings");
        QTest::addColumn<int>("layersMore"); // gathered decoder layers against the default
        QTest::addRow("default (BACKWARD_PRE)") << "" << 0;
        QTest::addRow("no prefetch") << "  fsdp_backward_prefetch: NO_PREFETCH\n" << -1;
        QTest::addRow("no backward, forward prefetch")
            << "  fsdp_backward_prefetch: NO_PREFETCH\n  fsdp_forward_prefetch: true\n"
            << 0;
    }
    void fsdpPrefetch()
    {
        QFETCH(QString, settings);
        QFETCH(int, layersMore);
        const auto plan = [](const QString& fsdp) {
            const QString yaml =
                "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n"
                + fsdp;
            const auto imported = plan::parseAccelerateYaml(
                yaml.toStdString(), "acc.yaml", fullInput(Sharding::Ddp, 8, 1));
            if (!imported.ok())
                qFatal("%s", imported.error().message.c_str());
            return plan::estimatePlan(
                imported->input, presetModel("Llama-3.1-8B"), presetGpu("H100-SXM"))
                .component("gather_buffers")
                ->bytes;
        };
        const double layerBytes = 2.0 * 218'112'000; // one Llama-3.1-8B decoder layer in bf16
        QCOMPARE(plan(settings) - plan({}), layersMore * layerBytes);
    }

    void deepSpeed_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<Offload>("offload");
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<int>("micro");
        QTest::addColumn<int>("accum");
        QTest::addRow("zero3 offload bf16")
            << R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 8,
            "bf16": {"enabled": true}, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
            "offload_param": {"device": "cpu", "pin_memory": true}, "overlap_comm": true}})"
            << Sharding::Zero3 << Offload::OptimizerAndParams << Precision::Bf16Mixed << 2 << 8;
        QTest::addRow("zero2 fp16 auto")
            << R"({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
            "fp16": {"enabled": "auto", "loss_scale": 0}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "none"}}})"
            << Sharding::Zero2 << Offload::None << Precision::Bf16Mixed << 4 << 4;
        QTest::addRow("zero1 fp16")
            << R"({"fp16": {"enabled": true}, "zero_optimization": {"stage": 1}})"
            << Sharding::Zero1 << Offload::None << Precision::Fp16Mixed << 4 << 4;
        QTest::addRow("stage 0 fp32")
            << R"({"fp16": {"enabled": false}, "zero_optimization": {"stage": 0}})" << Sharding::Ddp
            << Offload::None << Precision::Fp32 << 4 << 4;
        QTest::addRow("legacy cpu_offload")
            << R"({"zero_optimization": {"stage": 2, "cpu_offload": true}})" << Sharding::Zero2
            << Offload::Optimizer << Precision::Bf16Mixed << 4 << 4;
    }
    void deepSpeed()
    {
        QFETCH(QString, json);
        QFETCH(Sharding, sharding);
        QFETCH(Offload, offload);
        QFETCH(Precision, precision);
        QFETCH(int, micro);
        QFETCH(int, accum);
        const auto imported =
            plan::parseDeepSpeedJson(json.toStdString(), "ds.json", plan::PlanInput{});
        QVERIFY2(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
        QCOMPARE(int(imported->input.sharding), int(sharding));
        QCOMPARE(int(imported->input.offload), int(offload));
        QCOMPARE(int(imported->input.precision), int(precision));
        QCOMPARE(imported->input.microBatch, micro);
        QCOMPARE(imported->input.gradAccum, accum);
        QVERIFY(!imported->applied.empty());
    }

    void deepSpeedErrors_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expected");
        QTest::addRow("not json") << "{\"zero_optimization\": "
                                  << "ds.json: byte";
        QTest::addRow("number overflow (found by the fuzz run)")
            << R"({"train_micro_batch_size_per_gpu": 1e57012648075850})"
            << "ds.json: not valid JSON";
        QTest::addRow("nested 100,000 deep")
            << "{\"x\":" + QString(100000, '[') + QString(100000, ']') + "}"
            << "ds.json: not valid JSON: nested deeper than 64 levels";
        QTest::addRow("over 64 MiB") << "{\"x\":\"" + QString(64 << 20, 'a') + "\"}"
                                     << "ds.json: not valid JSON: the document is 67108872 bytes, "
                                        "more than the limit of 67108864";
        QTest::addRow("stage 4") << R"({"zero_optimization": {"stage": 4}})"
                                 << "field 'zero_optimization.stage': got 4";
        QTest::addRow("stage text") << R"({"zero_optimization": {"stage": "three"}})"
                                    << "zero_optimization.stage";
        QTest::addRow("micro 0") << R"({"train_micro_batch_size_per_gpu": 0})"
                                 << "field 'train_micro_batch_size_per_gpu': got 0";
        QTest::addRow("both precisions")
            << R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})"
            << "both enabled";
        QTest::addRow("param offload at stage 2")
            << R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}})"
            << "parameter offload needs stage 3";
        QTest::addRow("bad device")
            << R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "gpu"}}})"
            << "offload_optimizer.device': got \"gpu\"";
        QTest::addRow("enabled text") << R"({"bf16": {"enabled": "yes"}})"
                                      << "field 'bf16.enabled'";
    }
    void deepSpeedErrors()
    {
        QFETCH(QString, json);
        QFETCH(QString, expected);
        const auto imported =
            plan::parseDeepSpeedJson(json.toStdString(), "ds.json", plan::PlanInput{});
        QVERIFY(!imported.ok());
        QVERIFY2(QString::fromStdString(imported.error().message).contains(expected),
            imported.error().message.c_str());
    }

    void accelerate_data()
    {
        QTest::addColumn<QString>("yaml");
        QTest::addColumn<Sharding>("sharding");
        QTest::addColumn<Offload>("offload");
        QTest::addColumn<Precision>("precision");
        QTest::addColumn<int>("gpusPerNode");
        QTest::addColumn<int>("nodes");
        QTest::addRow("fsdp")
            << "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nfsdp_config:\n"
               "  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_offload_params: false\n"
               "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_activation_checkpointing: "
               "true\n"
               "mixed_precision: bf16\nnum_machines: 2\nnum_processes: 16\nmachine_rank: 0\n"
            << Sharding::FsdpFull << Offload::None << Precision::Bf16Mixed << 8 << 2;
        QTest::addRow("fsdp numeric strategy + offload")
            << "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: 2\n"
               "  fsdp_offload_params: true\nmixed_precision: fp16\nnum_processes: 4\n"
            << Sharding::FsdpGradOp << Offload::OptimizerAndParams << Precision::Fp16Mixed << 4
            << 1;
        QTest::addRow("deepspeed")
            << "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n"
               "  offload_optimizer_device: cpu\n  offload_param_device: none\n  "
               "gradient_accumulation_steps: 2\n"
               "mixed_precision: 'no'\nnum_processes: 8\n"
            << Sharding::Zero3 << Offload::Optimizer << Precision::Fp32 << 8 << 1;
        QTest::addRow("multi gpu")
            << "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"
            << Sharding::Ddp << Offload::None << Precision::Bf16Mixed << 2 << 1;
    }
    void accelerate()
    {
        QFETCH(QString, yaml);
        QFETCH(Sharding, sharding);
        QFETCH(Offload, offload);
        QFETCH(Precision, precision);
        QFETCH(int, gpusPerNode);
        QFETCH(int, nodes);
        plan::PlanInput base;
        base.vmSize = "Standard_ND96amsr_A100_v4";
        const auto imported = plan::parseAccelerateYaml(yaml.toStdString(), "acc.yaml", base);
        QVERIFY2(imported.ok(), imported.ok() ? "" : imported.error().message.c_str());
        QCOMPARE(int(imported->input.sharding), int(sharding));
        QCOMPARE(int(imported->input.offload), int(offload));
        QCOMPARE(int(imported->input.precision), int(precision));
        QCOMPARE(imported->input.gpusPerNode, gpusPerNode);
        QCOMPARE(imported->input.nodes, nodes);
        // accelerate accumulates under FSDP's no_sync (docs/PLANNER.md 4.17).
        QCOMPARE(imported->input.fsdp.noSync, plan::isFsdp(sharding));
        QVERIFY(plan::validatePlanInput(imported->input).ok());
    }

    void accelerateErrors_data()
    {
        QTest::addColumn<QString>("yaml");
        QTest::addColumn<QString>("expected");
        QTest::addRow("type") << "distributed_type: TPU\n"
                              << "acc.yaml:1:19: distributed_type: got TPU, expected NO, MULTI_GPU";
        QTest::addRow("strategy")
            << "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: HALF\n"
            << "fsdp_config.fsdp_sharding_strategy: got HALF, expected FULL_SHARD";
        QTest::addRow("processes") << "num_processes: 6\nnum_machines: 4\n"
                                   << "not a multiple of num_machines";
        QTest::addRow("negative") << "num_processes: -1\n"
                                  << "num_processes: got -1, expected an integer from 1";
        QTest::addRow("precision") << "mixed_precision: int4\n"
                                   << "mixed_precision: got int4, expected no, fp16, bf16 or fp8";
        QTest::addRow("offload flag")
            << "distributed_type: FSDP\nfsdp_config:\n  fsdp_offload_params: maybe\n"
            << "expected true or false";
        QTest::addRow("not a map") << "- a\n- b\n"
                                   << "expected a mapping";
    }
    void accelerateErrors()
    {
        QFETCH(QString, yaml);
        QFETCH(QString, expected);
        const auto imported =
            plan::parseAccelerateYaml(yaml.toStdString(), "acc.yaml", plan::PlanInput{});
        QVERIFY(!imported.ok());
        QVERIFY2(QString::fromStdString(imported.error().message).contains(expected),
            imported.error().message.c_str());
        QVERIFY(QString::fromStdString(imported.error().message).contains("acc.yaml"));
    }
};

QTEST_GUILESS_MAIN(TestPlanFiles)
#include "test_plan_files.moc"
