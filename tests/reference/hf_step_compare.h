#pragma once

// One optimizer step of our trainer against transformers, peft and
// torch.optim.AdamW (hf_reference.py train-step) on the same files and
// batch: the helpers the reference suites share.
// LibTorch before Qt (LIBTORCH.md: Qt's keywords break its headers).
#include "data/batch.h"
#include "hf_reference_process.h"
#include "tensor_files.h"
#include "train/llama_model.h"
#include "train/model_config.h"
#include "train/model_loader.h"
#include "train/peft_adapter.h"
#include "train/train_step.h"
#include "train/training_session.h"

#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>

namespace tb::reference {

using train::ComputeDType;
using train::FlatParameters;
using train::LlamaForCausalLm;
using train::LoraSpec;

// Adam's first update: lr * g / (|g| + eps), so each weight moves by about lr.
constexpr double kLearningRate = 1e-2;
constexpr double kWeightDecay = 0.1;
constexpr double kBeta1 = 0.9;
constexpr double kBeta2 = 0.95;
constexpr double kEpsilon = 1e-8;

// Largest difference over the reference's largest magnitude: the error on the
// scale of the tensor (element-wise ratios blow up where values cross zero).
inline double relativeError(const torch::Tensor& ours, const torch::Tensor& theirs)
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
    torch::Tensor attentionMask; // padded inputs only: 0 at the last 3 positions of row 1
    QString path; // all of them, as a safetensors file for the reference
};

enum class Padding { None, RightOfRow1 };

inline Inputs writeInputs(
    std::int64_t vocabSize, const QTemporaryDir& dir, Padding padding = Padding::None)
{
    torch::manual_seed(1234);
    Inputs inputs;
    inputs.ids = torch::randint(0, vocabSize, {2, 12}, torch::kLong);
    inputs.labels = inputs.ids.clone();
    inputs.labels[0].slice(0, 0, 4).fill_(-100);
    std::map<std::string, torch::Tensor> tensors = {
        {"input_ids", inputs.ids}, {"labels", inputs.labels}};
    if (padding == Padding::RightOfRow1) {
        inputs.attentionMask = torch::ones({2, 12}, torch::kLong);
        inputs.attentionMask[1].slice(0, 9).fill_(0);
        inputs.labels[1].slice(0, 9).fill_(-100);
        tensors["attention_mask"] = inputs.attentionMask;
    }
    inputs.path = dir.filePath("inputs.safetensors");
    writeTensorFile(inputs.path.toStdString(), tensors);
    return inputs;
}

inline std::int64_t vocabSizeOf(const QString& folder)
{
    const auto config = train::loadLlamaConfig(folder.toStdString() + "/config.json");
    return config ? config->vocabSize : 0;
}

inline std::shared_ptr<LlamaForCausalLm> loadOrFail(
    const QString& folder, ComputeDType dtype, QString* problem)
{
    auto model = train::loadCausalLm(folder.toStdString(), dtype);
    if (!model) {
        *problem = QString::fromStdString(model.error().toString());
        return nullptr;
    }
    return *model;
}

inline data::Batch trainerBatch(const Inputs& inputs)
{
    data::Batch batch;
    batch.batchSize = static_cast<std::size_t>(inputs.ids.size(0));
    batch.sequenceLength = static_cast<std::size_t>(inputs.ids.size(1));
    const torch::Tensor ids = inputs.ids.to(torch::kInt).contiguous();
    const torch::Tensor labels = inputs.labels.to(torch::kInt).contiguous();
    batch.inputIds.assign(ids.data_ptr<std::int32_t>(), ids.data_ptr<std::int32_t>() + ids.numel());
    batch.labels.assign(
        labels.data_ptr<std::int32_t>(), labels.data_ptr<std::int32_t>() + labels.numel());
    if (inputs.attentionMask.defined()) {
        const torch::Tensor mask = inputs.attentionMask.to(torch::kInt).contiguous();
        batch.attentionMask.assign(
            mask.data_ptr<std::int32_t>(), mask.data_ptr<std::int32_t>() + mask.numel());
    } else {
        batch.attentionMask.assign(batch.inputIds.size(), 1);
    }
    return batch;
}

// A run config for one step of `method` from `model` with the hyper-parameters
// above; LoRA takes rank, alpha and targets from the adapter it starts from.
inline config::RunConfig stepConfig(
    const QString& model, const QString& method, const LoraSpec& lora)
{
    config::RunConfig config;
    config.model = model.toStdString();
    config.method = method == "full" ? config::Method::Full : config::Method::Lora;
    config.precision = config::Precision::Fp32;
    config.lora.rank = static_cast<int>(lora.rank);
    config.lora.alpha = lora.alpha;
    config.lora.dropout = 0.0;
    config.lora.targetModules = lora.targetModules;
    config.lora.targetParameters = lora.targetParameters;
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

inline UpdateError updateError(const FlatParameters& parameters, const TensorMap& theirs)
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

inline torch::Tensor masterGradient(
    const FlatParameters& parameters, const FlatParameters::Segment& segment)
{
    const auto& unit = parameters.units()[static_cast<size_t>(segment.unit)];
    return unit.masterGradients.narrow(0, segment.offset, segment.numel).view(segment.shape);
}

// One AdamW step of `method` ("full", or "lora" from the adapter peft
// makes, B non-zero) from `folder` on `inputs`: ours against PyTorch's.
struct StepComparison {
    QString problem; // not empty: a side could not run
    train::StepResult ours;
    TensorMap theirs; // "loss", "aux_loss" where the model has one, "grad.*", "param.*"
    double lossError = 0.0; // relative
    double gradientError = 0.0; // relativeError of the worst gradient
    std::string worstGradient;
    UpdateError update;
    bool sameParameters = false; // PyTorch trains exactly our parameters

    bool within() const
    {
        return problem.isEmpty() && sameParameters && lossError <= 1e-5 && gradientError <= 2e-5
            && update.compared <= 5e-5 && update.all <= 2.0;
    }
    QString figures(const QString& label) const
    {
        if (!problem.isEmpty())
            return label + ": " + problem;
        return QString("%1: loss %2, gradients %3 (worst: %4), updated weights %5 x lr "
                       "(%6 of %7 with |g| < %8: %9 x lr)%10")
            .arg(label)
            .arg(lossError, 0, 'g', 3)
            .arg(gradientError, 0, 'g', 3)
            .arg(QString::fromStdString(worstGradient))
            .arg(update.compared, 0, 'g', 3)
            .arg(update.belowFloor)
            .arg(update.elements)
            .arg(kGradientFloor)
            .arg(update.all, 0, 'g', 3)
            .arg(sameParameters ? "" : "; PyTorch trains other parameters than ours");
    }
};

// `prepare` runs on our session before the step (activation checkpointing, ...);
// `adapterOptions` go to the reference's train-step ("--expert-lora", "both").
inline StepComparison compareOptimizerStep(const QString& folder, const QString& method,
    const Inputs& inputs, const QTemporaryDir& dir,
    const std::function<void(train::TrainingSession&)>& prepare = {},
    const QStringList& adapterOptions = {})
{
    StepComparison result;
    const QString adapter = method == "lora" ? dir.filePath("peft_adapter") : QString();
    const QString out = dir.filePath("reference_step.safetensors");
    QStringList arguments = {"--model", folder, "--inputs", inputs.path, "--out", out, "--lr",
        QString::number(kLearningRate), "--weight-decay", QString::number(kWeightDecay), "--beta1",
        QString::number(kBeta1), "--beta2", QString::number(kBeta2), "--eps",
        QString::number(kEpsilon)};
    if (!adapter.isEmpty())
        arguments << "--make-adapter" << adapter << adapterOptions;
    const auto ran = runReference("train-step", arguments);
    if (!ran.ok) {
        result.problem = ran.problem;
        return result;
    }
    result.theirs = readTensorFile(out.toStdString());

    train::TrainingSession session;
    LoraSpec lora;
    if (!adapter.isEmpty()) {
        const auto spec = train::readPeftAdapterConfig(adapter.toStdString());
        if (!spec) {
            result.problem = QString::fromStdString(spec.error().toString());
            return result;
        }
        lora = *spec;
    }
    const auto base = loadOrFail(folder, ComputeDType::Float32, &result.problem);
    if (!base)
        return result;
    // A run config lists names: those a target_modules pattern selects.
    const auto targets = train::targetModuleNames(*base, lora);
    if (!targets) {
        result.problem = QString::fromStdString(targets.error().toString());
        return result;
    }
    lora.targetModules = *targets;
    session.config = stepConfig(folder, method, lora);
    const auto prepared = train::prepareTrainableModel(session, base, adapter.toStdString());
    if (!prepared) {
        result.problem = QString::fromStdString(prepared.error().toString());
        return result;
    }
    if (prepare)
        prepare(session);

    FlatParameters& parameters = *session.parameters;
    result.ours =
        train::accumulateStepGradients(*session.model, parameters, {trainerBatch(inputs)});
    const double theirLoss = result.theirs.at("loss").item<double>();
    result.lossError = std::abs(result.ours.loss - theirLoss) / std::abs(theirLoss);
    std::size_t found = 0;
    for (const auto& segment : parameters.segments()) {
        const auto it = result.theirs.find("grad." + segment.name);
        if (it == result.theirs.end())
            continue;
        ++found;
        const double error = relativeError(masterGradient(parameters, segment), it->second);
        if (error >= result.gradientError) {
            result.gradientError = error;
            result.worstGradient = segment.name;
        }
    }
    // Every parameter PyTorch trains is one of ours, and back: a gradient and
    // an updated weight each, besides the loss and the aux loss.
    const std::size_t extra = result.theirs.count("aux_loss") + 1;
    result.sameParameters =
        found == parameters.segments().size() && 2 * found + extra == result.theirs.size();
    if (!result.sameParameters)
        return result;
    session.optimizer->step(kLearningRate);
    result.update = updateError(parameters, result.theirs);
    return result;
}

} // namespace tb::reference
