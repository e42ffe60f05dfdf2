// LibTorch before Qt (LIBTORCH.md: Qt's keywords break its headers).
#include "data/batch.h"
#include "hf_reference_process.h"
#include "tensor_files.h"
#include "train/chunked_loss.h"
#include "train/llama_model.h"
#include "train/lora.h"
#include "train/merged_export.h"
#include "train/model_loader.h"
#include "train/peft_adapter.h"
#include "train/train_step.h"
#include "train/training_session.h"

#include <QTemporaryDir>
#include <QTest>

#include <filesystem>

// Our model, adapters, merged exports and optimizer step against the Hugging
// Face stack (transformers, peft, torch.optim.AdamW) on the same safetensors
// files: stories260K and tiny random models of each family, written by
// transformers itself (docs/MODEL.md, "Against transformers and peft").
using namespace tb;
using namespace tb::train;
using reference::readTensorFile;
using reference::runReference;
using reference::TensorMap;
using reference::writeTensorFile;

namespace {

const QString kStories = QStringLiteral("stories260K");
const QStringList kFamilies = {kStories, "llama2", "llama3", "mistral", "qwen2"};

// Adam's first update: lr * g / (|g| + eps), so each weight moves by about lr.
constexpr double kLearningRate = 1e-2;
constexpr double kWeightDecay = 0.1;
constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.95;
constexpr double kEpsilon = 1e-8;

// Largest difference over the reference's largest magnitude: the error on the
// scale of the tensor (element-wise ratios blow up where values cross zero).
double relativeError(const torch::Tensor& ours, const torch::Tensor& theirs)
{
    const torch::Tensor a = ours.detach().to(torch::kDouble);
    const torch::Tensor b = theirs.detach().to(torch::kDouble);
    if (a.sizes() != b.sizes())
        return std::numeric_limits<double>::infinity();
    const double scale = b.abs().max().item<double>();
    return (a - b).abs().max().item<double>() / (scale > 0.0 ? scale : 1.0);
}

struct Inputs {
    torch::Tensor ids; // [2, 12] int64
    torch::Tensor labels; // the ids, the first 4 positions of row 0 left out (-100)
    QString path; // both, as a safetensors file for the reference
};

Inputs writeInputs(std::int64_t vocabSize, const QTemporaryDir& dir)
{
    torch::manual_seed(1234);
    Inputs inputs;
    inputs.ids = torch::randint(0, vocabSize, {2, 12}, torch::kLong);
    inputs.labels = inputs.ids.clone();
    inputs.labels[0].slice(0, 0, 4).fill_(-100);
    inputs.path = dir.filePath("inputs.safetensors");
    writeTensorFile(inputs.path.toStdString(), {{"input_ids", inputs.ids}, {"labels", inputs.labels}});
    return inputs;
}

void addFamilyRows()
{
    QTest::addColumn<QString>("family");
    for (const QString& family : kFamilies)
        QTest::newRow(qPrintable(family)) << family;
}

bool haveModel(const QString& family)
{
    return family != kStories
        || std::filesystem::exists(TB_SHARED_DATA_DIR "/models/stories260K/model.safetensors");
}

// stories260K from the shared data, or a tiny random model of the family that
// transformers writes into `dir`. Empty with `problem` set on failure.
QString modelFolder(const QString& family, const QTemporaryDir& dir, QString* problem)
{
    if (family == kStories)
        return QStringLiteral(TB_SHARED_DATA_DIR "/models/stories260K");
    const QString out = dir.filePath(family);
    const auto made = runReference("make-model", {"--family", family, "--seed", "7", "--out", out});
    if (!made.ok)
        *problem = made.problem;
    return made.ok ? out : QString();
}

// transformers' (+ peft's) logits and loss for the inputs.
TensorMap referenceForward(const QString& model, const Inputs& inputs, const QString& dtype,
    const QString& adapter, const QTemporaryDir& dir, QString* problem)
{
    const QString out = dir.filePath("reference_forward.safetensors");
    QStringList arguments = {"--model", model, "--dtype", dtype, "--inputs", inputs.path, "--out", out};
    if (!adapter.isEmpty())
        arguments << "--adapter" << adapter;
    const auto ran = runReference("forward", arguments);
    if (!ran.ok) {
        *problem = ran.problem;
        return {};
    }
    return readTensorFile(out.toStdString());
}

double ourLoss(LlamaForCausalLm& model, const Inputs& inputs)
{
    torch::NoGradGuard noGrad;
    const LossRows rows = selectLossRows(model.hiddenStates(inputs.ids), inputs.labels);
    return chunkedCrossEntropy(rows.hidden, model.outputWeight(), rows.targets,
        static_cast<double>(rows.targets.size(0)))
        .item<double>();
}

torch::Tensor ourLogits(LlamaForCausalLm& model, const Inputs& inputs)
{
    torch::NoGradGuard noGrad;
    model.eval();
    return model.forward(inputs.ids).to(torch::kFloat);
}

LoraSpec everyProjection()
{
    LoraSpec spec;
    spec.rank = 4;
    spec.alpha = 8.0;
    spec.targetModules = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    return spec;
}

// Our LoRA on every projection, B drawn away from zero so the adapter counts.
void attachRandomAdapter(LlamaForCausalLm& model)
{
    QVERIFY(attachLora(model, everyProjection(), 11).ok());
    torch::NoGradGuard noGrad;
    torch::manual_seed(5);
    for (auto& [name, layer] : loraLayers(model))
        layer->loraB().normal_(0.0, 0.1);
}

std::shared_ptr<LlamaForCausalLm> loadOrFail(const QString& folder, ComputeDType dtype, QString* problem)
{
    auto model = loadCausalLm(folder.toStdString(), dtype);
    if (!model) {
        *problem = QString::fromStdString(model.error().toString());
        return nullptr;
    }
    return *model;
}

data::Batch trainerBatch(const Inputs& inputs)
{
    data::Batch batch;
    batch.batchSize = static_cast<std::size_t>(inputs.ids.size(0));
    batch.sequenceLength = static_cast<std::size_t>(inputs.ids.size(1));
    const torch::Tensor ids = inputs.ids.to(torch::kInt).contiguous();
    const torch::Tensor labels = inputs.labels.to(torch::kInt).contiguous();
    batch.inputIds.assign(ids.data_ptr<std::int32_t>(), ids.data_ptr<std::int32_t>() + ids.numel());
    batch.labels.assign(
        labels.data_ptr<std::int32_t>(), labels.data_ptr<std::int32_t>() + labels.numel());
    batch.attentionMask.assign(batch.inputIds.size(), 1);
    return batch;
}

// A run config for one step of `method` from `model` with the hyper-parameters
// above; LoRA takes rank, alpha and targets from the adapter it starts from.
config::RunConfig stepConfig(const QString& model, const QString& method, const LoraSpec& lora)
{
    config::RunConfig config;
    config.model = model.toStdString();
    config.method = method == "full" ? config::Method::Full : config::Method::Lora;
    config.precision = config::Precision::Fp32;
    config.lora.rank = static_cast<int>(lora.rank);
    config.lora.alpha = lora.alpha;
    config.lora.dropout = 0.0;
    config.lora.targetModules = lora.targetModules;
    config.training.learningRate = kLearningRate;
    config.training.weightDecay = kWeightDecay;
    config.training.adamBeta1 = kBeta1;
    config.training.adamBeta2 = kBeta2;
    config.training.adamEpsilon = kEpsilon;
    config.training.maxGradNorm = 0.0;
    return config;
}

torch::Tensor masterGradient(const FlatParameters& parameters, const FlatParameters::Segment& segment)
{
    const auto& unit = parameters.units()[static_cast<size_t>(segment.unit)];
    return unit.masterGradients.narrow(0, segment.offset, segment.numel).view(segment.shape);
}

} // namespace

class TestHfReference : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        setComputeThreads(1);
        const auto found = reference::runPython(
            {"-c", "import torch, transformers, peft, safetensors, tokenizers"}, 120000);
        if (!found.ok)
            QFAIL(qPrintable("the reference environment lacks a package of "
                             "packaging/python-reference.txt (packaging/setup.sh test installs "
                             "them; or configure with -DTUNEBENCH_REFERENCE_PYTHON=...): "
                + found.problem));
    }

    void logitsAndLossEqualTransformers_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("dtype");
        QTest::addColumn<double>("tolerance");
        for (const QString& family : kFamilies) {
            QTest::addRow("%s fp32", qPrintable(family)) << family << "float32" << 1e-5;
            QTest::addRow("%s bf16", qPrintable(family)) << family << "bfloat16" << 1e-2;
        }
    }

    void logitsAndLossEqualTransformers()
    {
        QFETCH(QString, family);
        QFETCH(QString, dtype);
        QFETCH(double, tolerance);
        if (!haveModel(family))
            QSKIP("no ../shared/data/models/stories260K beside the repository");
        QTemporaryDir dir;
        QString problem;
        const QString folder = modelFolder(family, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const auto ours = loadOrFail(
            folder, dtype == "bfloat16" ? ComputeDType::BFloat16 : ComputeDType::Float32, &problem);
        QVERIFY2(ours, qPrintable(problem));
        const Inputs inputs = writeInputs(ours->config().vocabSize, dir);
        const TensorMap theirs = referenceForward(folder, inputs, dtype, {}, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));

        const double theirLoss = theirs.at("loss").item<double>();
        for (const AttentionBackend backend : {AttentionBackend::Fused, AttentionBackend::Plain}) {
            ours->setAttentionBackend(backend);
            const double logits = relativeError(ourLogits(*ours, inputs), theirs.at("logits"));
            const double loss = std::abs(ourLoss(*ours, inputs) - theirLoss) / std::abs(theirLoss);
            const QString figures = QString("%1 %2 %3 attention: logits %4, loss %5 (relative)")
                                        .arg(family, dtype,
                                            backend == AttentionBackend::Fused ? "fused" : "plain")
                                        .arg(logits, 0, 'g', 3)
                                        .arg(loss, 0, 'g', 3);
            qInfo().noquote() << figures;
            QVERIFY2(logits <= tolerance && loss <= tolerance, qPrintable(figures));
        }
    }

    // Saved by us, loaded by peft (no missing or unexpected key): peft's logits
    // are ours; merged by us, loaded by transformers: the same logits again.
    void ourAdapterAndMergedExportLoadInPeftAndTransformers_data() { addFamilyRows(); }
    void ourAdapterAndMergedExportLoadInPeftAndTransformers()
    {
        QFETCH(QString, family);
        if (!haveModel(family))
            QSKIP("no ../shared/data/models/stories260K beside the repository");
        QTemporaryDir dir;
        QString problem;
        const QString folder = modelFolder(family, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const auto ours = loadOrFail(folder, ComputeDType::Float32, &problem);
        QVERIFY2(ours, qPrintable(problem));
        attachRandomAdapter(*ours);
        const QString adapter = dir.filePath("adapter");
        const auto saved =
            savePeftAdapter(*ours, everyProjection(), adapter.toStdString(), folder.toStdString());
        QVERIFY2(saved.ok(), saved.ok() ? "" : saved.error().toString().c_str());
        const Inputs inputs = writeInputs(ours->config().vocabSize, dir);
        const torch::Tensor logits = ourLogits(*ours, inputs);

        const TensorMap peft = referenceForward(folder, inputs, "float32", adapter, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const double viaPeft = relativeError(logits, peft.at("logits"));

        const QString merged = dir.filePath("merged");
        const auto exported = exportMergedModel(*ours, merged.toStdString(), folder.toStdString(),
            folder.toStdString(), ComputeDType::Float32);
        QVERIFY2(exported.ok(), exported.ok() ? "" : exported.error().toString().c_str());
        const TensorMap hf = referenceForward(merged, inputs, "float32", {}, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const double viaMerged = relativeError(logits, hf.at("logits"));

        const QString figures = QString("%1: our adapter in peft %2, our merged export in "
                                        "transformers %3 (relative, logits)")
                                    .arg(family)
                                    .arg(viaPeft, 0, 'g', 3)
                                    .arg(viaMerged, 0, 'g', 3);
        qInfo().noquote() << figures;
        QVERIFY2(viaPeft <= 1e-5 && viaMerged <= 1e-5, qPrintable(figures));
    }

    // Made by peft with non-zero B, loaded as the trainer loads --init-adapter.
    void peftAdapterLoadsWithPeftsLogits_data() { addFamilyRows(); }
    void peftAdapterLoadsWithPeftsLogits()
    {
        QFETCH(QString, family);
        if (!haveModel(family))
            QSKIP("no ../shared/data/models/stories260K beside the repository");
        QTemporaryDir dir;
        QString problem;
        const QString folder = modelFolder(family, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const QString adapter = dir.filePath("peft_adapter");
        const auto made = runReference("make-adapter", {"--model", folder, "--out", adapter});
        QVERIFY2(made.ok, qPrintable(made.problem));
        const auto ours = loadOrFail(folder, ComputeDType::Float32, &problem);
        QVERIFY2(ours, qPrintable(problem));
        const auto spec = readPeftAdapterConfig(adapter.toStdString());
        QVERIFY2(spec.ok(), spec.ok() ? "" : spec.error().toString().c_str());
        QVERIFY(attachLora(*ours, *spec, 1).ok());
        const auto loaded = loadPeftAdapter(*ours, adapter.toStdString());
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
        const Inputs inputs = writeInputs(ours->config().vocabSize, dir);
        const TensorMap peft = referenceForward(folder, inputs, "float32", adapter, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const double error = relativeError(ourLogits(*ours, inputs), peft.at("logits"));
        qInfo().noquote() << family << "peft's adapter in our model: logits" << error;
        QVERIFY2(error <= 1e-5, qPrintable(QString::number(error)));
    }

    void optimizerStepEqualsPyTorch_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("method");
        for (const QString& family : kFamilies)
            for (const char* method : {"full", "lora"})
                QTest::addRow("%s %s", qPrintable(family), method) << family << QString(method);
    }

    // One AdamW step from the same weights (LoRA: the same peft adapter, B
    // non-zero) on the same batch: loss, every gradient, every updated weight.
    void optimizerStepEqualsPyTorch()
    {
        QFETCH(QString, family);
        QFETCH(QString, method);
        if (!haveModel(family))
            QSKIP("no ../shared/data/models/stories260K beside the repository");
        QTemporaryDir dir;
        QString problem;
        const QString folder = modelFolder(family, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QString adapter;
        LoraSpec lora;
        if (method == "lora") {
            adapter = dir.filePath("peft_adapter");
            const auto made = runReference("make-adapter", {"--model", folder, "--out", adapter});
            QVERIFY2(made.ok, qPrintable(made.problem));
            const auto spec = readPeftAdapterConfig(adapter.toStdString());
            QVERIFY(spec.ok());
            lora = *spec;
        }
        TrainingSession session;
        session.config = stepConfig(folder, method, lora);
        const auto base = loadOrFail(folder, ComputeDType::Float32, &problem);
        QVERIFY2(base, qPrintable(problem));
        const auto prepared = prepareTrainableModel(session, base, adapter.toStdString());
        QVERIFY2(prepared.ok(), prepared.ok() ? "" : prepared.error().toString().c_str());
        const Inputs inputs = writeInputs(base->config().vocabSize, dir);

        const QString out = dir.filePath("reference_step.safetensors");
        QStringList arguments = {"--model", folder, "--inputs", inputs.path, "--out", out, "--lr",
            QString::number(kLearningRate), "--weight-decay", QString::number(kWeightDecay),
            "--beta1", QString::number(kBeta1), "--beta2", QString::number(kBeta2), "--eps",
            QString::number(kEpsilon)};
        if (!adapter.isEmpty())
            arguments << "--adapter" << adapter;
        const auto ran = runReference("train-step", arguments);
        QVERIFY2(ran.ok, qPrintable(ran.problem));
        const TensorMap theirs = readTensorFile(out.toStdString());

        FlatParameters& parameters = *session.parameters;
        const StepResult step =
            accumulateStepGradients(*session.model, parameters, {trainerBatch(inputs)});
        const double theirLoss = theirs.at("loss").item<double>();
        const double lossError = std::abs(step.loss - theirLoss) / std::abs(theirLoss);
        double gradientError = 0.0;
        std::string worstGradient;
        for (const auto& segment : parameters.segments()) {
            const auto found = theirs.find("grad." + segment.name);
            QVERIFY2(found != theirs.end(), ("PyTorch trains no " + segment.name).c_str());
            const double error = relativeError(masterGradient(parameters, segment), found->second);
            if (error >= gradientError) {
                gradientError = error;
                worstGradient = segment.name;
            }
        }
        // Every parameter PyTorch trains is one of ours: the sets are equal.
        QCOMPARE(2 * parameters.segments().size() + 1, theirs.size());

        session.optimizer->step(kLearningRate);
        double weightError = 0.0; // in units of the learning rate (a step's size)
        for (const auto& segment : parameters.segments()) {
            const torch::Tensor updated = parameters.masterView(segment);
            const double error =
                (updated.to(torch::kDouble) - theirs.at("param." + segment.name).to(torch::kDouble))
                    .abs()
                    .max()
                    .item<double>()
                / kLearningRate;
            weightError = std::max(weightError, error);
        }
        const QString figures =
            QString("%1 %2: loss %3, gradients %4 (worst: %5), updated weights %6 x lr")
                .arg(family, method)
                .arg(lossError, 0, 'g', 3)
                .arg(gradientError, 0, 'g', 3)
                .arg(QString::fromStdString(worstGradient))
                .arg(weightError, 0, 'g', 3);
        qInfo().noquote() << figures;
        QVERIFY2(lossError <= 1e-5 && gradientError <= 1e-4 && weightError <= 1e-4,
            qPrintable(figures));
    }
};

QTEST_GUILESS_MAIN(TestHfReference)
#include "test_hf_reference.moc"
