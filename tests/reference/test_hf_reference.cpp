// LibTorch before Qt (LIBTORCH.md: Qt's keywords break its headers).
#include "../support/test_data.h"
#include "data/batch.h"
#include "hf_reference_process.h"
#include "tensor_files.h"
#include "train/chunked_loss.h"
#include "train/llama_model.h"
#include "train/lora.h"
#include "train/merged_export.h"
#include "train/model_config.h"
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
const QStringList kFamilies = {
    kStories, "llama2", "llama3", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3",
    "phi3-longrope", "mixtral", "qwen3_moe"};

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

std::int64_t vocabSizeOf(const QString& folder)
{
    const auto config = loadLlamaConfig(folder.toStdString() + "/config.json");
    return config ? config->vocabSize : 0;
}

void addFamilyRows()
{
    QTest::addColumn<QString>("family");
    for (const QString& family : kFamilies)
        QTest::newRow(qPrintable(family)) << family;
}

// transformers' (+ peft's) logits and loss for the inputs, per dtype and
// attention: "logits.float32.sdpa", "loss.bfloat16.eager".
TensorMap referenceForward(const QString& model, const Inputs& inputs, const QString& dtypes,
    const QString& adapter, const QTemporaryDir& dir, QString* problem)
{
    const QString out = dir.filePath("reference_forward.safetensors");
    QStringList arguments = {
        "--model", model, "--dtypes", dtypes, "--inputs", inputs.path, "--out", out};
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
    return model.nextTokenLoss(rows, static_cast<double>(rows.targets.size(0))).item<double>();
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

// Adam's first step moves each weight by lr g / (|g| + eps): about lr sign(g),
// flat in g except where |g| is near eps, where fp32 rounding of the gradient
// decides the step. Compared to 5e-5 lr (5e-7 at lr 1e-2, four fp32 spacings
// of a unit weight) where |g| >= kGradientFloor (the update's sensitivity
// there is eps |dg| / g^2, below 1e-6 lr); elsewhere only bounded by the
// step size.
constexpr double kGradientFloor = 1e-5;

struct UpdateError {
    double compared = 0.0; // max |ours - theirs| / lr where |g| >= kGradientFloor
    double all = 0.0; // the same over every element
    std::int64_t belowFloor = 0;
    std::int64_t elements = 0;
};

UpdateError updateError(const FlatParameters& parameters, const TensorMap& theirs)
{
    UpdateError error;
    for (const auto& segment : parameters.segments()) {
        const torch::Tensor ours = parameters.masterView(segment).to(torch::kDouble);
        const torch::Tensor expected = theirs.at("param." + segment.name).to(torch::kDouble);
        const torch::Tensor gradient = theirs.at("grad." + segment.name).to(torch::kDouble);
        const torch::Tensor difference = (ours - expected).abs() / kLearningRate;
        const torch::Tensor steep = gradient.abs() < kGradientFloor;
        error.all = std::max(error.all, difference.max().item<double>());
        error.compared =
            std::max(error.compared, difference.masked_fill(steep, 0.0).max().item<double>());
        error.belowFloor += steep.sum().item<std::int64_t>();
        error.elements += difference.numel();
    }
    return error;
}

torch::Tensor masterGradient(const FlatParameters& parameters, const FlatParameters::Segment& segment)
{
    const auto& unit = parameters.units()[static_cast<size_t>(segment.unit)];
    return unit.masterGradients.narrow(0, segment.offset, segment.numel).view(segment.shape);
}

} // namespace

class TestHfReference : public QObject {
    Q_OBJECT

    QTemporaryDir m_models; // the tiny random models, written once by transformers

    QString modelFolder(const QString& family) const
    {
        return family == kStories ? QStringLiteral(TB_DEMO_MODEL_DIR) : m_models.filePath(family);
    }

private slots:
    void initTestCase()
    {
        setComputeThreads(1);
        QStringList families = kFamilies;
        families.removeAll(kStories);
        // Fails, naming the package, where the environment lacks one.
        const auto made = runReference("make-models",
            {"--families", families.join(','), "--seed", "7", "--out", m_models.path()});
        if (!made.ok)
            QFAIL(qPrintable("the Hugging Face reference cannot run (packaging/setup.sh test "
                             "installs packaging/python-reference.txt; "
                             "-DTUNEBENCH_REFERENCE_PYTHON=... picks another Python): "
                + made.problem));
    }

    void cleanupTestCase() { reference::stopReferenceServer(); }

    void logitsAndLossEqualTransformers_data() { addFamilyRows(); }

    // fp32 within 1e-5 and bf16 within 1e-2 of the logits' scale; our fused
    // attention against transformers' sdpa, our plain one against its eager.
    void logitsAndLossEqualTransformers()
    {
        QFETCH(QString, family);
        QTemporaryDir dir;
        QString problem;
        const QString folder = modelFolder(family);
        const Inputs inputs = writeInputs(vocabSizeOf(folder), dir);
        const TensorMap theirs =
            referenceForward(folder, inputs, "float32,bfloat16", {}, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));

        QStringList failures;
        struct Case {
            ComputeDType dtype;
            QString name;
            double tolerance;
        };
        for (const Case& c : {Case{ComputeDType::Float32, "float32", 1e-5},
                 Case{ComputeDType::BFloat16, "bfloat16", 1e-2}}) {
            const auto ours = loadOrFail(folder, c.dtype, &problem);
            QVERIFY2(ours, qPrintable(problem));
            for (const AttentionBackend backend : {AttentionBackend::Fused, AttentionBackend::Plain}) {
                ours->setAttentionBackend(backend);
                const QString key = c.name + (backend == AttentionBackend::Fused ? ".sdpa" : ".eager");
                const double theirLoss = theirs.at("loss." + key.toStdString()).item<double>();
                const double logits =
                    relativeError(ourLogits(*ours, inputs), theirs.at("logits." + key.toStdString()));
                const double loss = std::abs(ourLoss(*ours, inputs) - theirLoss) / std::abs(theirLoss);
                const QString figures = QString("%1 %2 (transformers %3): logits %4, loss %5 (relative)")
                                            .arg(family,
                                                backend == AttentionBackend::Fused ? "fused" : "plain",
                                                key)
                                            .arg(logits, 0, 'g', 3)
                                            .arg(loss, 0, 'g', 3);
                qInfo().noquote() << figures;
                if (logits > c.tolerance || loss > c.tolerance)
                    failures << figures;
            }
        }
        QVERIFY2(failures.isEmpty(), qPrintable(failures.join("; ")));
    }

    void ourAdapterAndMergedExportLoadInPeftAndTransformers_data() { addFamilyRows(); }

    // Saved by us, loaded by peft (no missing or unexpected key): peft's logits
    // are ours; merged by us, loaded by transformers: the same logits again.
    void ourAdapterAndMergedExportLoadInPeftAndTransformers()
    {
        QFETCH(QString, family);
        QTemporaryDir dir;
        QString problem;
        const QString folder = modelFolder(family);
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
        const double viaPeft = relativeError(logits, peft.at("logits.float32.sdpa"));

        const QString merged = dir.filePath("merged");
        const auto exported = exportMergedModel(*ours, merged.toStdString(), folder.toStdString(),
            folder.toStdString(), ComputeDType::Float32);
        QVERIFY2(exported.ok(), exported.ok() ? "" : exported.error().toString().c_str());
        const TensorMap hf = referenceForward(merged, inputs, "float32", {}, dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const double viaMerged = relativeError(logits, hf.at("logits.float32.sdpa"));

        const QString figures = QString("%1: our adapter in peft %2, our merged export in "
                                        "transformers %3 (relative, logits)")
                                    .arg(family)
                                    .arg(viaPeft, 0, 'g', 3)
                                    .arg(viaMerged, 0, 'g', 3);
        qInfo().noquote() << figures;
        QVERIFY2(viaPeft <= 1e-5 && viaMerged <= 1e-5, qPrintable(figures));
    }

    void peftAdapterLoadsWithPeftsLogits_data() { addFamilyRows(); }

    // Made by peft with non-zero B, loaded as the trainer loads --init-adapter.
    void peftAdapterLoadsWithPeftsLogits()
    {
        QFETCH(QString, family);
        QTemporaryDir dir;
        QString problem;
        const QString folder = modelFolder(family);
        const auto ours = loadOrFail(folder, ComputeDType::Float32, &problem);
        QVERIFY2(ours, qPrintable(problem));
        const Inputs inputs = writeInputs(ours->config().vocabSize, dir);
        const QString adapter = dir.filePath("peft_adapter");
        const QString logits = dir.filePath("peft_logits.safetensors");
        const auto made = runReference("make-adapter",
            {"--model", folder, "--inputs", inputs.path, "--logits", logits, "--out", adapter});
        QVERIFY2(made.ok, qPrintable(made.problem));
        const auto spec = readPeftAdapterConfig(adapter.toStdString());
        QVERIFY2(spec.ok(), spec.ok() ? "" : spec.error().toString().c_str());
        QVERIFY(attachLora(*ours, *spec, 1).ok());
        const auto loaded = loadPeftAdapter(*ours, adapter.toStdString());
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
        const double error = relativeError(
            ourLogits(*ours, inputs), readTensorFile(logits.toStdString()).at("logits"));
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

    // One AdamW step from the same weights (LoRA: the adapter peft made, B
    // non-zero) on the same batch: loss, every gradient, every updated weight.
    void optimizerStepEqualsPyTorch()
    {
        QFETCH(QString, family);
        QFETCH(QString, method);
        QTemporaryDir dir;
        const QString folder = modelFolder(family);
        const Inputs inputs = writeInputs(vocabSizeOf(folder), dir);
        const QString adapter = method == "lora" ? dir.filePath("peft_adapter") : QString();
        const QString out = dir.filePath("reference_step.safetensors");
        QStringList arguments = {"--model", folder, "--inputs", inputs.path, "--out", out, "--lr",
            QString::number(kLearningRate), "--weight-decay", QString::number(kWeightDecay),
            "--beta1", QString::number(kBeta1), "--beta2", QString::number(kBeta2), "--eps",
            QString::number(kEpsilon)};
        if (!adapter.isEmpty())
            arguments << "--make-adapter" << adapter;
        const auto ran = runReference("train-step", arguments);
        QVERIFY2(ran.ok, qPrintable(ran.problem));
        const TensorMap theirs = readTensorFile(out.toStdString());

        QString problem;
        TrainingSession session;
        LoraSpec lora;
        if (!adapter.isEmpty()) {
            const auto spec = readPeftAdapterConfig(adapter.toStdString());
            QVERIFY(spec.ok());
            lora = *spec;
        }
        session.config = stepConfig(folder, method, lora);
        const auto base = loadOrFail(folder, ComputeDType::Float32, &problem);
        QVERIFY2(base, qPrintable(problem));
        const auto prepared = prepareTrainableModel(session, base, adapter.toStdString());
        QVERIFY2(prepared.ok(), prepared.ok() ? "" : prepared.error().toString().c_str());

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
        const UpdateError update = updateError(parameters, theirs);
        const QString figures =
            QString("%1 %2: loss %3, gradients %4 (worst: %5), updated weights %6 x lr "
                    "(%7 of %8 with |g| < %9: %10 x lr)")
                .arg(family, method)
                .arg(lossError, 0, 'g', 3)
                .arg(gradientError, 0, 'g', 3)
                .arg(QString::fromStdString(worstGradient))
                .arg(update.compared, 0, 'g', 3)
                .arg(update.belowFloor)
                .arg(update.elements)
                .arg(kGradientFloor)
                .arg(update.all, 0, 'g', 3);
        qInfo().noquote() << figures;
        QVERIFY2(lossError <= 1e-5 && gradientError <= 2e-5 && update.compared <= 5e-5
                && update.all <= 2.0,
            qPrintable(figures));
    }
};

QTEST_GUILESS_MAIN(TestHfReference)
#include "test_hf_reference.moc"
