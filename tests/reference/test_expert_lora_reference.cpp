// LibTorch before Qt (LIBTORCH.md: Qt's keywords break its headers).
#include "hf_step_compare.h"
#include "train/chunked_loss.h"
#include "train/expert_lora.h"
#include "train/lora.h"
#include "train/merged_export.h"
#include "train/peft_adapter.h"

#include <QTemporaryDir>
#include <QTest>

// LoRA on the experts of a mixture of experts against peft 0.21's
// target_parameters (its ParamWrapper over transformers' fused 3-D expert
// weights), on tiny random Mixtral and Qwen3-MoE models written by
// transformers: our adapter in peft, peft's in ours, our merged export in
// transformers, and one AdamW step (docs/TRAINING.md, "LoRA on the experts").
using namespace tb;
using namespace tb::train;
using namespace tb::reference;

namespace {

const QStringList kFamilies = {"mixtral", "qwen3_moe"};

// hf_reference.py's --expert-lora choices, and the target_parameters each means.
const std::map<QString, std::vector<std::string>> kExpertTargets = {
    {"both", {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}},
    {"gate_up", {"mlp.experts.gate_up_proj"}},
    {"down", {"mlp.experts.down_proj"}},
};

void addRows()
{
    QTest::addColumn<QString>("family");
    QTest::addColumn<QString>("experts");
    for (const QString& family : kFamilies)
        for (const char* experts : {"both", "gate_up", "down"})
            QTest::addRow("%s %s", qPrintable(family), experts) << family << QString(experts);
}

LoraSpec expertSpec(const QString& experts)
{
    LoraSpec spec;
    spec.rank = 4;
    spec.alpha = 8.0;
    spec.dropout = 0.0;
    spec.targetModules = {"q_proj", "k_proj", "v_proj", "o_proj"};
    spec.targetParameters = kExpertTargets.at(experts);
    return spec;
}

// Every B drawn away from zero, so every adapted weight counts.
void randomizeB(LlamaForCausalLm& model)
{
    torch::NoGradGuard noGrad;
    torch::manual_seed(5);
    for (auto& item : model.named_parameters())
        if (item.key().find(".lora_B.") != std::string::npos)
            item.value().normal_(0.0, 0.1);
}

torch::Tensor ourLogits(LlamaForCausalLm& model, const Inputs& inputs)
{
    torch::NoGradGuard noGrad;
    model.eval();
    return model.forward(inputs.ids).to(torch::kFloat);
}

// transformers' fp32 logits (sdpa) of `model`, with peft's `adapter` if given.
torch::Tensor referenceLogits(const QString& model, const QString& adapter, const Inputs& inputs,
    const QTemporaryDir& dir, QString* problem)
{
    const QString out = dir.filePath("reference_forward.safetensors");
    QStringList arguments = {"--model", model, "--inputs", inputs.path, "--out", out};
    if (!adapter.isEmpty())
        arguments << "--adapter" << adapter;
    const auto ran = runReference("forward", arguments);
    if (!ran.ok) {
        *problem = ran.problem;
        return {};
    }
    return readTensorFile(out.toStdString()).at("logits.float32.sdpa");
}

} // namespace

class TestExpertLoraReference : public QObject {
    Q_OBJECT

    QTemporaryDir m_models; // the tiny random models, written once by transformers

private slots:
    void initTestCase()
    {
        setComputeThreads(1);
        const auto made = runReference("make-models",
            {"--families", kFamilies.join(','), "--seed", "7", "--out", m_models.path()});
        if (!made.ok)
            QFAIL(qPrintable("the Hugging Face reference cannot run (packaging/setup.sh test "
                             "installs packaging/python-reference.txt): "
                + made.problem));
    }

    void cleanupTestCase() { reference::stopReferenceServer(); }

    void ourAdapterLoadsInPeftAndOurMergedExportInTransformers_data() { addRows(); }

    // Saved by us, loaded by PeftModel.from_pretrained with no missing or
    // unexpected key (hf_reference.py fails on either): peft's logits are
    // ours. Merged by us (the experts' deltas folded into w1/w3/w2 or
    // gate_proj/up_proj/down_proj), loaded by transformers: the same logits.
    void ourAdapterLoadsInPeftAndOurMergedExportInTransformers()
    {
        QFETCH(QString, family);
        QFETCH(QString, experts);
        QTemporaryDir dir;
        QString problem;
        const QString folder = m_models.filePath(family);
        const auto ours = loadOrFail(folder, ComputeDType::Float32, &problem);
        QVERIFY2(ours, qPrintable(problem));
        const auto attached = attachLora(*ours, expertSpec(experts), 11);
        QVERIFY2(attached.ok(), attached.ok() ? "" : attached.error().toString().c_str());
        randomizeB(*ours);
        const QString adapter = dir.filePath("adapter");
        const auto saved = savePeftAdapter(
            *ours, expertSpec(experts), adapter.toStdString(), folder.toStdString());
        QVERIFY2(saved.ok(), saved.ok() ? "" : saved.error().toString().c_str());
        const Inputs inputs = writeInputs(ours->config().vocabSize, dir);
        const torch::Tensor logits = ourLogits(*ours, inputs);

        const torch::Tensor viaPeft = referenceLogits(folder, adapter, inputs, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const QString merged = dir.filePath("merged");
        const auto exported = exportMergedModel(*ours, merged.toStdString(), folder.toStdString(),
            folder.toStdString(), ComputeDType::Float32);
        QVERIFY2(exported.ok(), exported.ok() ? "" : exported.error().toString().c_str());
        const torch::Tensor viaMerged = referenceLogits(merged, {}, inputs, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));

        const double peftError = relativeError(logits, viaPeft);
        const double mergedError = relativeError(logits, viaMerged);
        const QString figures = QString("%1 experts %2: our adapter in peft %3, our merged "
                                        "export in transformers %4 (relative, logits)")
                                    .arg(family, experts)
                                    .arg(peftError, 0, 'g', 3)
                                    .arg(mergedError, 0, 'g', 3);
        qInfo().noquote() << figures;
        QVERIFY2(peftError <= 1e-5 && mergedError <= 1e-5, qPrintable(figures));
    }

    void peftAdapterLoadsWithPeftsLogits_data() { addRows(); }

    // Made by peft (attention and the experts, B non-zero), read as the
    // trainer reads --init-adapter: its target_parameters, every matrix.
    void peftAdapterLoadsWithPeftsLogits()
    {
        QFETCH(QString, family);
        QFETCH(QString, experts);
        QTemporaryDir dir;
        QString problem;
        const QString folder = m_models.filePath(family);
        const auto ours = loadOrFail(folder, ComputeDType::Float32, &problem);
        QVERIFY2(ours, qPrintable(problem));
        const Inputs inputs = writeInputs(ours->config().vocabSize, dir);
        const QString adapter = dir.filePath("peft_adapter");
        const QString logits = dir.filePath("peft_logits.safetensors");
        const auto made = runReference("make-adapter",
            {"--model", folder, "--inputs", inputs.path, "--logits", logits, "--out", adapter,
                "--expert-lora", experts});
        QVERIFY2(made.ok, qPrintable(made.problem));
        const auto spec = readPeftAdapterConfig(adapter.toStdString());
        QVERIFY2(spec.ok(), spec.ok() ? "" : spec.error().toString().c_str());
        std::vector<std::string> targets = spec->targetParameters;
        std::vector<std::string> expected = kExpertTargets.at(experts);
        std::sort(targets.begin(), targets.end());
        std::sort(expected.begin(), expected.end());
        QCOMPARE(targets, expected);
        QVERIFY(attachLora(*ours, *spec, 1).ok());
        const auto loaded = loadPeftAdapter(*ours, adapter.toStdString());
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
        const double error = relativeError(
            ourLogits(*ours, inputs), readTensorFile(logits.toStdString()).at("logits"));
        qInfo().noquote() << family << experts << "peft's adapter in our model: logits" << error;
        QVERIFY2(error <= 1e-5, qPrintable(QString::number(error)));
    }

    void optimizerStepEqualsPeft_data() { addRows(); }

    // One AdamW step from the adapter peft made (B non-zero) on the same
    // batch: loss, every gradient and updated weight of attention's and the
    // experts' LoRA, matched by name (ours <- peft's ParamWrapper names).
    void optimizerStepEqualsPeft()
    {
        QFETCH(QString, family);
        QFETCH(QString, experts);
        QTemporaryDir dir;
        const QString folder = m_models.filePath(family);
        const StepComparison step = compareOptimizerStep(folder, "lora",
            writeInputs(vocabSizeOf(folder), dir), dir, {}, {"--expert-lora", experts});
        const QString figures = step.figures(family + " lora, experts " + experts);
        qInfo().noquote() << figures;
        QVERIFY2(step.within(), qPrintable(figures));
    }
};

QTEST_GUILESS_MAIN(TestExpertLoraReference)
#include "test_expert_lora_reference.moc"
