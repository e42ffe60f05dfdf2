#include "../support/test_paths.h"
#include "plan_fixture.h"

#include <QtTest>

// The hf-trainer engine's rules one at a time (docs/PLANNER.md 4.14), on a
// preset; tests/reference/test_hf_step_peak holds their sum against the
// Hugging Face stack's measured step. Also what the router's load-balancing
// loss keeps, under each engine.
using namespace tb;

Q_DECLARE_METATYPE(tb::plan::PlanInput)
Q_DECLARE_METATYPE(tb::plan::Engine)
Q_DECLARE_METATYPE(tb::plan::Sharding)

namespace {

plan::PlanInput hfInput(plan::Method method, plan::Precision precision)
{
    plan::PlanInput in;
    in.model = "Llama-3.1-8B";
    in.method = method;
    in.precision = precision;
    in.engine = plan::Engine::HfTrainer;
    in.gpu = "A100-80GB-SXM";
    in.vmSize.clear();
    in.microBatch = 2;
    in.seqLen = 1024;
    in.gradAccum = 1;
    return in;
}

plan::PlanResult planOf(const plan::PlanInput& in)
{
    static const common::Result<plan::Catalog> catalog =
        plan::Catalog::load(tb::test::sourcePath("presets"));
    if (!catalog.ok())
        qFatal("%s", catalog.error().message.c_str());
    common::Result<plan::PlanResult> r = plan::planFromCatalog(in, *catalog);
    if (!r.ok())
        qFatal("%s", r.error().message.c_str());
    return std::move(*r);
}

double bytesOf(const plan::PlanResult& r, std::string_view key)
{
    const plan::MemoryComponent* c = r.component(key);
    return c ? c->bytes : 0;
}

} // namespace

class TestHfTrainerPlan : public QObject {
    Q_OBJECT

private slots:
    // prepare_model_for_kbit_training makes every parameter that is not
    // 4-bit fp32: Llama-3.1-8B's embeddings, head and norms (1.05 B).
    void qloraUpcastsWhatIsNotQuantized()
    {
        const plan::PlanResult hf = planOf(hfInput(plan::Method::Qlora, plan::Precision::Bf16));
        plan::PlanInput referenceIn = hfInput(plan::Method::Qlora, plan::Precision::Bf16);
        referenceIn.engine = plan::Engine::Reference;
        referenceIn.loss = plan::LossMode::FullFp32;
        const plan::PlanResult reference = planOf(referenceIn);
        const double unquantized = 2.0 * 128256 * 4096 + 65.0 * 4096; // embed, head, norms
        QCOMPARE(bytesOf(hf, "weights") - bytesOf(reference, "weights"), 2 * unquantized);
    }

    // peft keeps adapters in fp32 whatever the model's dtype: weights,
    // gradients and AdamW's states at 4 B.
    void adaptersAreFp32()
    {
        const plan::PlanResult hf = planOf(hfInput(plan::Method::Lora, plan::Precision::Bf16));
        const double trainable = double(hf.paramsTrainable);
        QCOMPARE(bytesOf(hf, "lora_weights"), 4 * trainable);
        QCOMPARE(bytesOf(hf, "optimizer"), 8 * trainable);
    }

    // Under FSDP TRL leaves a sharded QLoRA as loaded (4.18): the weights
    // that are not 4-bit stay bf16 and the adapters, their gradients and
    // AdamW's states are bf16, each sharded over the two GPUs.
    void shardedQloraKeepsTheModelsDtype()
    {
        plan::PlanInput in = hfInput(plan::Method::Qlora, plan::Precision::Bf16);
        in.sharding = plan::Sharding::FsdpFull;
        in.gpusPerNode = 2;
        in.gpu.clear();
        in.vmSize = "Standard_ND96amsr_A100_v4";
        const plan::PlanResult hf = planOf(in);
        in.engine = plan::Engine::Reference;
        in.loss = plan::LossMode::FullFp32;
        const plan::PlanResult reference = planOf(in);
        const double trainable = double(hf.paramsTrainable);
        QCOMPARE(bytesOf(hf, "weights"), bytesOf(reference, "weights"));
        QCOMPARE(bytesOf(hf, "lora_weights"), 2 * trainable / 2);
        QCOMPARE(bytesOf(hf, "optimizer"), 4 * trainable / 2);
        // The same model under DDP is prepared: fp32 adapters.
        in.engine = plan::Engine::HfTrainer;
        in.loss = plan::LossMode::Auto;
        in.sharding = plan::Sharding::Ddp;
        QCOMPARE(bytesOf(planOf(in), "lora_weights"), 4 * trainable);
    }

    // PyTorch runs FULL_SHARD and SHARD_GRAD_OP as NO_SHARD on one GPU: no
    // gathered copy of any unit; two GPUs gather.
    void fsdpOnOneGpuGathersNothing_data()
    {
        QTest::addColumn<plan::Sharding>("sharding");
        QTest::addColumn<int>("gpus");
        QTest::addColumn<bool>("gathers");
        QTest::newRow("full shard, 1 GPU") << plan::Sharding::FsdpFull << 1 << false;
        QTest::newRow("grad-op, 1 GPU") << plan::Sharding::FsdpGradOp << 1 << false;
        QTest::newRow("full shard, 2 GPUs") << plan::Sharding::FsdpFull << 2 << true;
    }
    void fsdpOnOneGpuGathersNothing()
    {
        QFETCH(plan::Sharding, sharding);
        QFETCH(int, gpus);
        QFETCH(bool, gathers);
        plan::PlanInput in = hfInput(plan::Method::Lora, plan::Precision::Bf16);
        in.sharding = sharding;
        in.gpusPerNode = gpus;
        in.gpu.clear();
        in.vmSize = "Standard_ND96amsr_A100_v4";
        const plan::PlanResult r = planOf(in);
        QCOMPARE(bytesOf(r, "gather_buffers") > 0, gathers);
        QCOMPARE(bytesOf(r, "weights_full") > 0, gathers && sharding == plan::Sharding::FsdpGradOp);
    }

    // The Trainer drops the model's output before backward: the loss holds
    // 12 B per logit at its peak, not the 14 of a loop that keeps it.
    void theLossIsTheWholeBatchsFp32Logits()
    {
        const plan::PlanResult hf = planOf(hfInput(plan::Method::Lora, plan::Precision::Bf16));
        QCOMPARE(bytesOf(hf, "logits"), 12.0 * 2 * 1024 * 128256);
    }

    void autocastCopiesOnlyUnderMixedPrecision_data()
    {
        QTest::addColumn<plan::PlanInput>("input");
        QTest::addColumn<double>("copies");
        const plan::PlanInput lora = hfInput(plan::Method::Lora, plan::Precision::Bf16Mixed);
        const double loraParams = double(planOf(lora).paramsTrainable);
        QTest::addRow("lora bf16-mixed: the adapters") << lora << 2 * loraParams;
        QTest::addRow("qlora bf16-mixed: the adapters and the fp32 head") << hfInput(
            plan::Method::Qlora, plan::Precision::Bf16Mixed) << 2 * (loraParams + 128256.0 * 4096);
        QTest::addRow("lora bf16: none")
            << hfInput(plan::Method::Lora, plan::Precision::Bf16) << 0.0;
    }
    void autocastCopiesOnlyUnderMixedPrecision()
    {
        QFETCH(plan::PlanInput, input);
        QFETCH(double, copies);
        QCOMPARE(bytesOf(planOf(input), "autocast_copies"), copies);
    }

    void refusesWhatItDoesNotPlan_data()
    {
        QTest::addColumn<plan::PlanInput>("input");
        QTest::addColumn<QString>("message");
        plan::PlanInput zero3 = hfInput(plan::Method::Lora, plan::Precision::Bf16);
        zero3.sharding = plan::Sharding::Zero3;
        QTest::addRow("zero3") << zero3
                               << "sharding: zero3 with engine hf-trainer, expected ddp "
                                  "or an FSDP strategy";
        plan::PlanInput ddpOffload = hfInput(plan::Method::Lora, plan::Precision::Bf16);
        ddpOffload.offload = plan::Offload::Optimizer;
        QTest::addRow("offload under ddp")
            << ddpOffload
            << "offload: optimizer with engine hf-trainer and sharding ddp, "
               "expected none";
        plan::PlanInput chunked = hfInput(plan::Method::Lora, plan::Precision::Bf16);
        chunked.loss = plan::LossMode::Chunked;
        QTest::addRow("chunked loss")
            << chunked << "loss: chunked, expected auto, full-fp32 or fused";
        QTest::addRow("full bf16-mixed")
            << hfInput(plan::Method::Full, plan::Precision::Bf16Mixed)
            << "precision: bf16-mixed with method full, expected bf16 or fp32";
    }
    void refusesWhatItDoesNotPlan()
    {
        QFETCH(plan::PlanInput, input);
        QFETCH(QString, message);
        const common::Status status = plan::validatePlanInput(input);
        QVERIFY(!status.ok());
        QVERIFY2(QString::fromStdString(status.error().message).contains(message),
            status.error().message.c_str());
    }

    // auto is chunked for the other engines, as before the option existed.
    void routerBalanceKeepsItsSoftmax_data()
    {
        QTest::addColumn<plan::Engine>("engine");
        QTest::addColumn<double>("keptPerElement"); // in units of the activations' bytes
        // The softmax of each layer's router logits; transformers also keeps
        // the logits, the model's output, until the loss reads them.
        QTest::newRow("tunebench") << plan::Engine::Tunebench << 1.0;
        QTest::newRow("hf-trainer") << plan::Engine::HfTrainer << 2.0;
    }

    void routerBalanceKeepsItsSoftmax()
    {
        QFETCH(plan::Engine, engine);
        QFETCH(double, keptPerElement);
        plan::PlanInput in = hfInput(plan::Method::Lora, plan::Precision::Bf16);
        in.engine = engine;
        in.gradientCheckpointing = false;
        model::ModelSpec spec = presetModel("Mixtral-8x7B-v0.1");
        const plan::GpuSpec& gpu = presetGpu("A100-80GB-SXM");
        const double without =
            plan::estimatePlan(in, spec, gpu).categoryBytes(plan::MemoryCategory::Activations);
        spec.outputRouterLogits = true;
        const double with =
            plan::estimatePlan(in, spec, gpu).categoryBytes(plan::MemoryCategory::Activations);
        const double tokens = double(in.microBatch) * in.seqLen;
        QCOMPARE(with - without, 32 * keptPerElement * 2 * tokens * 8);
    }

    // The Trainer's evaluation at per_device_eval_batch_size: without
    // gradients, the logits of the whole batch, their fp32 upcast and
    // log-softmax's output, the last hidden states and the KV cache
    // (use_cache); it sets the plan's peak when its batch is larger.
    void evaluationIsAPhaseOfItsOwn()
    {
        plan::PlanInput in = hfInput(plan::Method::Lora, plan::Precision::Bf16);
        in.evalBatch = 8;
        const plan::PlanResult r = planOf(in);
        const auto phase = std::find_if(r.phases.begin(), r.phases.end(),
            [](const plan::PhasePeak& p) { return p.phase == plan::Phase::Evaluation; });
        QVERIFY(phase != r.phases.end());
        const double states = r.categoryBytes(plan::MemoryCategory::Weights)
            + r.categoryBytes(plan::MemoryCategory::Optimizer);
        const double t = 8.0 * in.seqLen, v = 128256, h = 4096, kv = 1024, layers = 32;
        QCOMPARE(
            phase->allocated, states + t * v * (2 + 4 + 4) + t * h * 2 + 2 * layers * t * kv * 2);
        QCOMPARE(r.perGpuBytes, phase->bytes);
        QCOMPARE(r.peakPhase()->phase, plan::Phase::Evaluation);
        in.evalBatch = 0;
        const plan::PlanResult none = planOf(in);
        QVERIFY(std::none_of(none.phases.begin(), none.phases.end(),
            [](const plan::PhasePeak& p) { return p.phase == plan::Phase::Evaluation; }));
    }

    void evaluationIsPlannedForTheTrainerOnly_data()
    {
        QTest::addColumn<plan::Engine>("engine");
        QTest::newRow("tunebench") << plan::Engine::Tunebench;
        QTest::newRow("reference") << plan::Engine::Reference;
    }
    void evaluationIsPlannedForTheTrainerOnly()
    {
        QFETCH(plan::Engine, engine);
        plan::PlanInput in = hfInput(plan::Method::Lora, plan::Precision::Bf16Mixed);
        in.engine = engine;
        in.evalBatch = 8;
        const common::Status status = plan::validatePlanInput(in);
        QVERIFY(!status.ok());
        QVERIFY2(status.error().message.find("eval_batch: 8 with engine") != std::string::npos,
            status.error().message.c_str());
    }

    void autoLossIsChunkedElsewhere()
    {
        plan::PlanInput in = hfInput(plan::Method::Lora, plan::Precision::Bf16);
        in.engine = plan::Engine::Reference;
        const double autoLogits = bytesOf(planOf(in), "logits");
        in.loss = plan::LossMode::Chunked;
        QCOMPARE(autoLogits, bytesOf(planOf(in), "logits"));
    }
};

QTEST_GUILESS_MAIN(TestHfTrainerPlan)
#include "test_hf_trainer_plan.moc"
