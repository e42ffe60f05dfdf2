#include "plan_fixture.h"

#include "model/parameter_count.h"

#include <cmath>

using namespace tb;
using plan::Sharding;

class TestThroughput : public QObject {
    Q_OBJECT

private slots:
    // 6N for full training, 4N for LoRA's frozen matrices, plus one forward
    // (2N of the blocks) when checkpointing; attention adds its s-term.
    void flopsPerToken_data()
    {
        QTest::addColumn<int>("method");
        QTest::addColumn<bool>("checkpointing");
        QTest::addColumn<double>("matmulFactor");
        QTest::addColumn<double>("blockRecompute");
        QTest::addColumn<double>("attentionFactor");
        QTest::addRow("full") << int(plan::Method::Full) << false << 6.0 << 0.0 << 3.0;
        QTest::addRow("full + ckpt") << int(plan::Method::Full) << true << 6.0 << 2.0 << 4.0;
        QTest::addRow("lora") << int(plan::Method::Lora) << false << 4.0 << 0.0 << 3.0;
        QTest::addRow("lora + ckpt") << int(plan::Method::Lora) << true << 4.0 << 2.0 << 4.0;
    }
    void flopsPerToken()
    {
        QFETCH(int, method);
        QFETCH(bool, checkpointing);
        QFETCH(double, matmulFactor);
        QFETCH(double, blockRecompute);
        QFETCH(double, attentionFactor);
        const model::ModelSpec& spec = presetModel("Llama-3-8B");
        plan::PlanInput in;
        in.method = plan::Method(method);
        in.gradientCheckpointing = checkpointing;
        in.seqLen = 2048;
        const plan::PlanResult r = plan::estimatePlan(in, spec, presetGpu("A100-80GB-SXM"));
        const model::ParameterCount c = model::countParameters(spec);
        const double matmul = double(c.blockLinear) + 128256.0 * 4096;
        const double attention = 4.0 * 32 * 4096 * 1024; // causal: s/2 context
        const double adapters = in.method == plan::Method::Full ? 0 : double(r.paramsTrainable);
        const double expected = matmulFactor * matmul + blockRecompute * double(c.blockLinear)
            + attentionFactor * attention + (6 + (checkpointing ? 2 : 0)) * adapters;
        QCOMPARE(r.flopsPerToken, expected);
        QVERIFY(!r.figure("flops_per_token")->explanation.empty());
    }

    // A mixture of experts multiplies a token through its router and k
    // experts, not all of them: Mixtral's 2 of 8 experts run about 12.9 B
    // parameters a token, so it plans near a 13 B dense model's speed, not
    // a 47 B one's (6 N with N the active matmul parameters).
    void mixtureOfExpertsRunsItsTopK_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<qint64>("activeBlock"); // router + k experts + attention, all layers
        QTest::addRow("Mixtral-8x7B")
            << "Mixtral-8x7B-v0.1" << qint64(32) * (41'943'040 + 32'768 + 2 * 3 * 58'720'256);
        QTest::addRow("Qwen3-30B-A3B")
            << "Qwen3-30B-A3B" << qint64(48) * (18'874'368 + 262'144 + 8 * 3 * 1'572'864);
    }
    void mixtureOfExpertsRunsItsTopK()
    {
        QFETCH(QString, model);
        QFETCH(qint64, activeBlock);
        const model::ModelSpec& spec = presetModel(qPrintable(model));
        plan::PlanInput in;
        in.method = plan::Method::Full;
        in.gradientCheckpointing = false;
        in.seqLen = 2048;
        const plan::PlanResult r = plan::estimatePlan(in, spec, presetGpu("A100-80GB-SXM"));
        const double head = double(spec.vocabSize) * double(spec.hiddenSize);
        const double attention = 4.0 * double(spec.numLayers) * double(spec.queryDim()) * 1024;
        QCOMPARE(model::countParameters(spec).blockActive, activeBlock);
        QCOMPARE(r.flopsPerToken, 6 * (double(activeBlock) + head) + 3 * attention);
        QVERIFY(r.flopsPerToken < 0.4 * 6 * double(model::countParameters(spec).total));
    }

    void timeAndCost()
    {
        plan::PlanInput in; // the default plan: 1 x NC24ads_A100_v4
        in.datasetTokens = 10'000'000;
        in.epochs = 2;
        const plan::VmSize* vm = presetVm("Standard_NC24ads_A100_v4");
        const plan::PlanResult r =
            plan::estimatePlan(in, presetModel("Llama-3.1-8B"), presetGpu("A100-80GB-PCIe"), vm);
        QCOMPARE(r.trainingTokens, 20'000'000.0);
        const double tokensPerStep = 4.0 * 2048 * 4;
        QCOMPARE(r.optimizerSteps, std::ceil(20'000'000.0 / tokensPerStep));
        QCOMPARE(r.tokensPerSecond, tokensPerStep / r.stepSeconds);
        QCOMPARE(r.hours, r.optimizerSteps * r.stepSeconds / 3600);
        QVERIFY(r.costKnown);
        QCOMPARE(r.costUsd, r.hours * 3.673);
        for (const char* key : {"flops_per_token", "peak_tflops", "utilisation", "compute_seconds",
                 "comm_seconds", "exposed_comm_seconds", "step_seconds", "tokens_per_second",
                 "samples_per_second", "training_tokens", "optimizer_steps", "hours", "cost_usd"}) {
            const plan::Figure* f = r.figure(key);
            QVERIFY2(f, key);
            QVERIFY2(!f->explanation.empty(), key);
        }
    }

    void bareGpuHasNoPrice()
    {
        const plan::PlanResult r =
            plan::estimatePlan(plan::PlanInput{}, presetModel("SmolLM2-135M"), presetGpu("T4"));
        QVERIFY(!r.costKnown);
        QVERIFY(!r.figure("cost_usd"));
    }

    void scalingFromOneToManyNodes()
    {
        plan::PlanInput in = fullInput(Sharding::FsdpFull, 8, 1);
        const auto curve = plan::scalingCurve(in, presetModel("Llama-3-8B"), presetGpu("H100-SXM"),
            presetVm("Standard_ND96isr_H100_v5"), 8);
        QCOMPARE(curve.size(), size_t(8));
        QCOMPARE(curve[0].efficiency, 1.0);
        // With 8 x 400 Gb/s InfiniBand per node the gathers hide under compute;
        // the sharded optimizer step even shrinks a little per GPU.
        for (size_t i = 1; i < curve.size(); ++i) {
            QVERIFY(curve[i].tokensPerSecond > curve[i - 1].tokensPerSecond);
            QVERIFY(curve[i].efficiency > 0.9 && curve[i].efficiency < 1.05);
        }
        // Over Ethernet (NC A100 v4 has no InfiniBand) a full fine-tune's
        // all-reduce does not hide: efficiency falls below 1.
        plan::PlanInput ethernetDdp = fullInput(Sharding::Ddp, 4, 1);
        const auto slow = plan::scalingCurve(ethernetDdp, presetModel("Llama-3.1-8B"),
            presetGpu("A100-80GB-PCIe"), presetVm("Standard_NC96ads_A100_v4"), 4);
        QVERIFY(slow[3].efficiency < 0.9);
        // Across nodes over Ethernet (no InfiniBand) the exposed communication grows.
        plan::PlanInput ddp = fullInput(Sharding::Ddp, 4, 1);
        ddp.method = plan::Method::Full;
        const plan::VmSize* ethernet = presetVm("Standard_NC96ads_A100_v4");
        ddp.nodes = 1;
        const plan::PlanResult one = plan::estimatePlan(
            ddp, presetModel("SmolLM2-1.7B"), presetGpu("A100-80GB-PCIe"), ethernet);
        ddp.nodes = 4;
        const plan::PlanResult four = plan::estimatePlan(
            ddp, presetModel("SmolLM2-1.7B"), presetGpu("A100-80GB-PCIe"), ethernet);
        QVERIFY(four.figure("comm_seconds")->value > one.figure("comm_seconds")->value);
        QVERIFY(!four.warnings.empty());
    }

    void noBf16FallsBackToFp32Speed()
    {
        plan::PlanInput in;
        const plan::PlanResult bf16 =
            plan::estimatePlan(in, presetModel("Mistral-7B-v0.1"), presetGpu("V100-16GB"));
        in.precision = plan::Precision::Fp16Mixed;
        const plan::PlanResult fp16 =
            plan::estimatePlan(in, presetModel("Mistral-7B-v0.1"), presetGpu("V100-16GB"));
        QCOMPARE(bf16.figure("peak_tflops")->value, 14.0);
        QCOMPARE(fp16.figure("peak_tflops")->value, 112.0);
        QVERIFY(fp16.tokensPerSecond > 5 * bf16.tokensPerSecond);
        bool warned = false;
        for (const std::string& w : bf16.warnings)
            warned = warned || w.find("no bf16") != std::string::npos;
        QVERIFY(warned);
    }

    void unknownPeakGivesNoSpeed()
    {
        const plan::PlanResult r = plan::estimatePlan(
            plan::PlanInput{}, presetModel("SmolLM2-135M"), presetGpu("RTXPRO6000-BSE"));
        QCOMPARE(r.tokensPerSecond, 0.0);
        QVERIFY(!r.warnings.empty());
    }

    void quietEstimateMatchesExplained()
    {
        plan::PlanInput in = fullInput(Sharding::Zero3, 8, 2);
        const plan::VmSize* vm = presetVm("Standard_ND96isr_H200_v5");
        const plan::PlanResult loud =
            plan::estimatePlan(in, presetModel("Qwen2.5-72B"), presetGpu("H200-SXM"), vm);
        const plan::PlanResult quiet = plan::estimatePlan(in, presetModel("Qwen2.5-72B"),
            presetGpu("H200-SXM"), vm, plan::EstimateOptions{false});
        QCOMPARE(quiet.perGpuBytes, loud.perGpuBytes);
        QCOMPARE(quiet.tokensPerSecond, loud.tokensPerSecond);
        QCOMPARE(quiet.costUsd, loud.costUsd);
        QVERIFY(quiet.memory[0].explanation.empty());
    }
};

QTEST_GUILESS_MAIN(TestThroughput)
#include "test_throughput.moc"
