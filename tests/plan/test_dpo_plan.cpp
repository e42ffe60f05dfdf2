#include "../support/qt_test_paths.h"
#include "plan_cli_fixture.h"
#include "plan_fixture.h"

#include "plan/plan_file.h"
#include "plan/plan_options.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

// DPO planned as our trainer runs it (docs/PLANNER.md 4.15): each of the
// micro_batch pairs is two rows in the policy's forward and backward, a
// reference forward without gradient runs over the same rows first, and the
// loss takes whole fp32 logits of the completion tokens. Each DPO plan is
// held against the same plan with objective sft.
using namespace tb;

namespace {

plan::PlanInput dpoInput(plan::PlanInput in)
{
    in.objective = plan::Objective::Dpo;
    return in;
}

plan::PlanResult planOf(const plan::PlanInput& in)
{
    const common::Result<plan::PlanResult> r = plan::planFromCatalog(in, presetCatalog());
    if (!r.ok())
        qFatal("%s", r.error().message.c_str());
    return *r;
}

double bytesOf(const plan::PlanResult& r, const char* key)
{
    const plan::MemoryComponent* c = r.component(key);
    return c ? c->bytes : 0;
}

double figureOf(const plan::PlanResult& r, const char* key)
{
    const plan::Figure* f = r.figure(key);
    if (!f)
        qFatal("no figure %s", key);
    return f->value;
}

bool near(double a, double b, double relative = 1e-9)
{
    return std::fabs(a - b) <= relative * std::max(std::fabs(a), std::fabs(b));
}

} // namespace

class TestDpoPlan : public tb::test::PlanCliFixture {
    Q_OBJECT

private slots:
    void againstTheSameSftPlan_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("precision");
        QTest::addColumn<bool>("checkpointing");
        QTest::addColumn<int>("microBatch");
        QTest::addRow("Llama-3.1-8B LoRA bf16 mixed, checkpointing") << "Llama-3.1-8B"
                                                                     << "lora"
                                                                     << "bf16-mixed" << true << 2;
        QTest::addRow("Llama-3.1-8B QLoRA bf16 mixed, checkpointing") << "Llama-3.1-8B"
                                                                      << "qlora"
                                                                      << "bf16-mixed" << true << 1;
        QTest::addRow("SmolLM2-135M LoRA fp32, no checkpointing") << "SmolLM2-135M"
                                                                  << "lora"
                                                                  << "fp32" << false << 4;
    }
    void againstTheSameSftPlan()
    {
        QFETCH(QString, model);
        QFETCH(QString, method);
        QFETCH(QString, precision);
        QFETCH(bool, checkpointing);
        QFETCH(int, microBatch);
        plan::PlanInput sft;
        sft.model = model.toStdString();
        sft.method = *plan::parseMethod(method.toStdString());
        sft.precision = *plan::parsePrecision(precision.toStdString());
        sft.gradientCheckpointing = checkpointing;
        sft.microBatch = microBatch;
        sft.seqLen = 1024;
        sft.packing = false;
        const plan::PlanResult s = planOf(sft);
        const plan::PlanResult d = planOf(dpoInput(sft));

        // The policy's activations are those of 2 x micro_batch rows.
        QVERIFY(near(bytesOf(d, "activations"), 2 * bytesOf(s, "activations")));
        // The reference forward is its own part, explained; its transient
        // peak comes before the policy's forward and stays below it here.
        const plan::MemoryComponent* reference = d.component("dpo_reference");
        QVERIFY(reference);
        QVERIFY(!s.component("dpo_reference"));
        QVERIFY2(reference->explanation.find("without gradient") != std::string::npos,
            reference->explanation.c_str());
        QCOMPARE(reference->bytes, 4.0 * 2 * microBatch); // its fp32 log-probabilities
        // The completion logits, made whole in fp32: 12 B a logit of every
        // token of the 2 x micro_batch rows (no data profiled: a bound), and
        // the gathered hidden states.
        const model::ModelSpec& spec = presetModel(model.toUtf8().constData());
        const double tokens = 2.0 * microBatch * sft.seqLen;
        const double a = sft.precision == plan::Precision::Fp32 ? 4 : 2;
        QVERIFY(near(bytesOf(d, "logits"),
            12 * tokens * double(spec.vocabSize) + a * tokens * double(spec.hiddenSize)));
        QVERIFY(d.perGpuBytes > s.perGpuBytes);

        // Time: a DPO step carries twice the tokens, each with the reference
        // forward's FLOPs (2 x matmul params + attention) on top.
        const double sftFlops = figureOf(s, "flops_per_token");
        const double dpoFlops = figureOf(d, "flops_per_token");
        QVERIFY(dpoFlops > sftFlops);
        QVERIFY(dpoFlops - sftFlops < sftFlops / 2); // a forward of a forward + backward
        QVERIFY(near(figureOf(d, "compute_seconds"),
            2 * figureOf(s, "compute_seconds") * dpoFlops / sftFlops));
        QVERIFY(near(d.tokensPerSecond * d.stepSeconds, 2 * s.tokensPerSecond * s.stepSeconds));
        // Per pair against per sequence: samples/s counts pairs.
        QVERIFY(near(d.samplesPerSecond, d.tokensPerSecond / (2.0 * sft.seqLen)));
    }

    // A profiled run's completion tokens size the logits, not its rows.
    void profiledCompletionTokensSizeTheLogits()
    {
        plan::PlanInput in = dpoInput(plan::PlanInput{});
        in.model = "SmolLM2-135M";
        in.packing = false;
        in.microBatch = 2;
        in.seqLen = 512;
        in.data = {.rows = 40,
            .tokens = 8000,
            .batchTokens = 9600,
            .microBatches = 10,
            .longestRow = 300,
            .peakLossTokens = 500,
            .source = "test"};
        const plan::PlanResult r = planOf(in);
        const model::ModelSpec& spec = presetModel("SmolLM2-135M");
        QVERIFY(near(bytesOf(r, "logits"),
            12 * 500.0 * double(spec.vocabSize) + 2 * 500.0 * double(spec.hiddenSize)));
    }

    // A full fine-tune has no reference without a second copy: refused,
    // naming the field. Packing does not apply to pairs: planned padded, said.
    void refusesFullAndSaysPackingDoesNotApply()
    {
        plan::PlanInput in = dpoInput(plan::PlanInput{});
        in.method = plan::Method::Full;
        const common::Status status = plan::validatePlanInput(in);
        QVERIFY(!status.ok());
        QVERIFY2(
            status.error().message.find("method: full with objective dpo, expected lora or qlora")
                != std::string::npos,
            status.error().message.c_str());

        plan::PlanInput packed = dpoInput(plan::PlanInput{});
        packed.packing = true;
        plan::PlanInput padded = packed;
        padded.packing = false;
        const plan::PlanResult p = planOf(packed);
        QVERIFY(std::find_if(p.warnings.begin(), p.warnings.end(), [](const std::string& w) {
            return w.find("packing does not apply") != std::string::npos;
        }) != p.warnings.end());
        QCOMPARE(p.hours, planOf(padded).hours);
    }

    void readFromAPlanFile_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<QString>("expected");
        QTest::addRow("dpo") << "objective: dpo" << true << "";
        QTest::addRow("any case") << "objective: DPO" << true << "";
        QTest::addRow("unknown") << "objective: ppo" << false
                                 << "objective: got ppo, expected sft or dpo";
    }
    void readFromAPlanFile()
    {
        QFETCH(QString, line);
        QFETCH(bool, ok);
        QFETCH(QString, expected);
        const std::string yaml =
            "version: 1\nmodel: Llama-3.1-8B\npacking: false\n" + line.toStdString() + "\n";
        const common::Result<plan::PlanInput> in = plan::parsePlanYaml(yaml, "dpo.yaml");
        QCOMPARE(in.ok(), ok);
        if (!ok) {
            QVERIFY2(in.error().message.find(expected.toStdString()) != std::string::npos,
                in.error().message.c_str());
            return;
        }
        QVERIFY(in->objective == plan::Objective::Dpo);
        // Written back under the same key.
        QVERIFY(plan::planToYaml(*in).find("objective: dpo") != std::string::npos);
    }

    void readFromTheCli()
    {
        const Run run = plan({"--model", "Llama-3.1-8B", "--objective", "dpo", "--json"});
        QCOMPARE(run.exitCode, 0);
        const nlohmann::json out = nlohmann::json::parse(run.out.toStdString());
        QCOMPARE(out["objective"], "dpo");
        bool reference = false;
        for (const nlohmann::json& c : out["components"])
            reference = reference || c["key"] == "dpo_reference";
        QVERIFY(reference);

        const Run refused = plan({"--model", "Llama-3.1-8B", "--objective", "ppo"});
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains("--objective") && refused.err.contains("ppo")
                && refused.err.contains("sft or dpo"),
            qPrintable(refused.err));
    }
};

QTEST_GUILESS_MAIN(TestDpoPlan)
#include "test_dpo_plan.moc"
