#include "train/dpo_step.h"

#include "train/host_read.h"
#include "train/llama_model.h"
#include "train/lora.h"

#include <algorithm>
#include <numeric>

namespace tb::train {

namespace {

// Every LoRA layer of the model off while this lives: the model is then its
// frozen base, DPO's reference.
class DisabledAdapters {
public:
    explicit DisabledAdapters(LlamaForCausalLm& model)
        : m_layers(loraLayers(model))
    {
        for (auto& [name, layer] : m_layers)
            layer->setEnabled(false);
    }
    ~DisabledAdapters()
    {
        for (auto& [name, layer] : m_layers)
            layer->setEnabled(true);
    }
    DisabledAdapters(const DisabledAdapters&) = delete;
    DisabledAdapters& operator=(const DisabledAdapters&) = delete;

private:
    std::vector<std::pair<std::string, std::shared_ptr<LoraLinear>>> m_layers;
};

// The figures a step sums on the device, in this order; all but the loss are
// divided by the step's pairs when read.
enum Figure : std::int64_t {
    kLoss,
    kRewardsChosen,
    kRewardsRejected,
    kRewardsMargin,
    kRewardsAccuracy,
    kLogpsChosen,
    kLogpsRejected,
    kReferenceLogpsChosen,
    kReferenceLogpsRejected,
    kFigureCount
};

torch::ScalarType lossTypeOf(const LlamaForCausalLm& model)
{
    return model.dtype() == torch::kDouble ? torch::kDouble : torch::kFloat;
}

PairLogProbs splitPairs(const torch::Tensor& perRow)
{
    const std::int64_t pairs = perRow.size(0) / 2;
    return {perRow.narrow(0, 0, pairs), perRow.narrow(0, pairs, pairs)};
}

// Completion tokens of each row: the labelled positions after the first.
torch::Tensor labelledTokens(const torch::Tensor& labels, const torch::TensorOptions& options)
{
    const std::int64_t tokens = labels.size(1);
    if (tokens < 2)
        return torch::zeros({labels.size(0)}, options);
    return labels.narrow(1, 1, tokens - 1).ne(data::kIgnoreIndex).sum(1).to(options);
}

// One micro-batch: the reference pass, the policy pass and, in training,
// its backward; returns the batch's figures (kFigureCount, double), the
// loss divided by the step's pairs.
torch::Tensor pairBatch(LlamaForCausalLm& model, const data::Batch& batch,
    const DpoLossSettings& settings, double stepPairs, bool backward = true)
{
    TORCH_CHECK(batch.rowsPerSample == 2 && batch.batchSize % 2 == 0,
        "a DPO batch holds whole preference pairs, chosen rows then rejected rows");
    const torch::Device device = model.outputWeight().device();
    const auto [ids, labels] = batchTensors(batch, device);
    torch::Tensor referenceRows;
    {
        torch::NoGradGuard noGrad;
        const DisabledAdapters reference(model);
        referenceRows = sequenceLogProbs(model, ids, labels);
    }
    const torch::Tensor policyRows = sequenceLogProbs(model, ids, labels);
    const PairLogProbs policy = splitPairs(policyRows);
    const PairLogProbs reference = splitPairs(referenceRows);
    const PairLogProbs tokens =
        splitPairs(labelledTokens(labels, policyRows.options().requires_grad(false)));
    const torch::Tensor loss =
        dpoPairLoss(policy, reference, {tokens.chosen, tokens.rejected}, settings).sum()
        / stepPairs;
    if (backward)
        loss.backward();
    const PairLogProbs rewards = dpoRewards(policy, reference, settings.beta);
    return torch::stack({loss.detach(), rewards.chosen.sum(), rewards.rejected.sum(),
                            (rewards.chosen - rewards.rejected).sum(),
                            rewards.chosen.gt(rewards.rejected).sum().to(policyRows.scalar_type()),
                            policy.chosen.detach().sum(), policy.rejected.detach().sum(),
                            reference.chosen.sum(), reference.rejected.sum()})
        .to(torch::kDouble);
}

// The step's micro-batches; `sums` receives the figures, on the device.
DpoStepResult accumulate(LlamaForCausalLm& model, FlatParameters& parameters,
    const std::vector<data::Batch>& batches, const DpoLossSettings& settings, torch::Tensor& sums)
{
    DpoStepResult result;
    StepResult& step = result.step;
    for (const data::Batch& batch : batches) {
        step.lossTokens += static_cast<std::int64_t>(batch.lossTokens());
        step.tokens += static_cast<std::int64_t>(batch.tokens());
        step.samples += static_cast<std::int64_t>(batch.batchSize / 2);
    }
    step.globalTokens = step.tokens;
    const double pairs = std::max<double>(1.0, static_cast<double>(step.samples));
    sums = torch::zeros({kFigureCount},
        torch::TensorOptions().dtype(torch::kDouble).device(model.outputWeight().device()));
    size_t last = batches.size();
    for (size_t b = batches.size(); b-- > 0;) {
        if (!batches[b].isEmpty()) {
            last = b;
            break;
        }
    }
    for (size_t b = 0; b < batches.size(); ++b) {
        if (batches[b].isEmpty())
            continue;
        sums += pairBatch(model, batches[b], settings, pairs);
        parameters.accumulateGradients(b == last);
    }
    return result;
}

std::vector<torch::Tensor> figureScalars(const torch::Tensor& sums)
{
    std::vector<torch::Tensor> scalars;
    for (std::int64_t i = 0; i < kFigureCount; ++i)
        scalars.push_back(sums[i]);
    return scalars;
}

// The figures read back, each but the loss divided by the pairs.
void fillFigures(const std::vector<double>& read, double pairs, PreferenceFigures& f)
{
    f.rewardsChosen = read.at(kRewardsChosen) / pairs;
    f.rewardsRejected = read.at(kRewardsRejected) / pairs;
    f.rewardsMargin = read.at(kRewardsMargin) / pairs;
    f.rewardsAccuracy = read.at(kRewardsAccuracy) / pairs;
    f.logpsChosen = read.at(kLogpsChosen) / pairs;
    f.logpsRejected = read.at(kLogpsRejected) / pairs;
    f.referenceLogpsChosen = read.at(kReferenceLogpsChosen) / pairs;
    f.referenceLogpsRejected = read.at(kReferenceLogpsRejected) / pairs;
}

void fill(const std::vector<double>& read, DpoStepResult& result)
{
    result.step.loss = read.at(kLoss);
    fillFigures(
        read, std::max<double>(1.0, static_cast<double>(result.step.samples)), result.figures);
}

} // namespace

torch::Tensor sequenceLogProbs(
    LlamaForCausalLm& model, const torch::Tensor& inputIds, const torch::Tensor& labels)
{
    const torch::Tensor hidden = model.hiddenStates(inputIds);
    const std::int64_t rows = hidden.size(0);
    const std::int64_t tokens = hidden.size(1);
    const torch::Device device = hidden.device();
    const auto options = hidden.options().dtype(lossTypeOf(model));
    if (tokens < 2)
        return torch::zeros({rows}, options);
    // Chosen on the host from the host's labels: no read of the device.
    const torch::Tensor next = labels.narrow(1, 1, tokens - 1).reshape({-1});
    const torch::Tensor kept = next.ne(data::kIgnoreIndex).nonzero().squeeze(1);
    const torch::Tensor rowOfKept = kept.div(tokens - 1, "floor");
    const torch::Tensor predicting = hidden.narrow(1, 0, tokens - 1)
                                         .reshape({-1, hidden.size(2)})
                                         .index_select(0, kept.to(device));
    const torch::Tensor targets = next.index_select(0, kept).to(device).unsqueeze(1);
    const torch::Tensor logProbs =
        torch::log_softmax(model.logitsFrom(predicting).to(options.dtype()), 1)
            .gather(1, targets)
            .squeeze(1);
    return torch::zeros({rows}, options).index_add(0, rowOfKept.to(device), logProbs);
}

PreferenceEval evaluateDpo(LlamaForCausalLm& model, std::span<const data::TokenizedExample> rows,
    std::size_t microBatch, std::int32_t padId, const DpoLossSettings& settings)
{
    PreferenceEval result;
    const std::size_t pairs = rows.size() / 2;
    if (pairs == 0 || microBatch == 0)
        return result;
    const bool wasTraining = model.is_training();
    model.eval();
    torch::NoGradGuard noGrad;
    torch::Tensor sums = torch::zeros({kFigureCount},
        torch::TensorOptions().dtype(torch::kDouble).device(model.outputWeight().device()));
    const data::BatchOptions options{microBatch, padId, 0, 2};
    std::vector<std::size_t> samples;
    for (std::size_t first = 0; first < pairs; first += microBatch) {
        samples.resize(std::min(microBatch, pairs - first));
        std::iota(samples.begin(), samples.end(), first);
        const data::Batch batch = data::collate(rows, data::rowsOfSamples(samples, 2), options);
        sums += pairBatch(model, batch, settings, static_cast<double>(pairs), false);
        result.tokens += static_cast<std::int64_t>(batch.tokens());
    }
    if (wasTraining)
        model.train();
    const std::vector<double> read = readToHost(figureScalars(sums));
    result.pairs = static_cast<std::int64_t>(pairs);
    result.loss = read.at(kLoss);
    fillFigures(read, static_cast<double>(pairs), result.figures);
    return result;
}

DpoStepResult accumulateDpoGradients(LlamaForCausalLm& model, FlatParameters& parameters,
    const std::vector<data::Batch>& batches, const DpoLossSettings& settings)
{
    torch::Tensor sums;
    DpoStepResult result = accumulate(model, parameters, batches, settings, sums);
    fill(readToHost(figureScalars(sums)), result);
    return result;
}

DpoStepResult trainDpoStep(LlamaForCausalLm& model, FlatParameters& parameters,
    FlatAdamW& optimizer, const std::vector<data::Batch>& batches, const DpoLossSettings& settings,
    double learningRate, double maxGradNorm)
{
    torch::Tensor sums;
    DpoStepResult result = accumulate(model, parameters, batches, settings, sums);
    fill(updateAfterAccumulation(parameters, optimizer, figureScalars(sums), learningRate,
             maxGradNorm, nullptr, result.step.gradNorm),
        result);
    return result;
}

} // namespace tb::train
