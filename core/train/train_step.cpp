#include "train/train_step.h"

#include "train/chunked_loss.h"
#include "train/data_parallel.h"
#include "train/host_read.h"
#include "train/llama_model.h"
#include "train/router_balance.h"

#include <cmath>
#include <numeric>
#include <optional>

namespace tb::train {

std::pair<torch::Tensor, torch::Tensor> batchTensors(
    const data::Batch& batch, const torch::Device& device)
{
    const auto rows = static_cast<std::int64_t>(batch.batchSize);
    const auto tokens = static_cast<std::int64_t>(batch.sequenceLength);
    auto wrap = [&](const std::vector<std::int32_t>& values) {
        // from_blob borrows; the int64 copy owns its memory.
        return torch::from_blob(const_cast<std::int32_t*>(values.data()), {rows, tokens},
            torch::TensorOptions().dtype(torch::kInt))
            .to(torch::kLong);
    };
    return {wrap(batch.inputIds).to(device), wrap(batch.labels)};
}

namespace {

// Adds one micro-batch's routing, layer by layer and expert by expert.
void addRouting(std::vector<std::vector<std::int64_t>>& sum,
    const std::vector<std::vector<std::int64_t>>& routed)
{
    if (sum.empty()) {
        sum = routed;
        return;
    }
    for (size_t layer = 0; layer < routed.size(); ++layer)
        for (size_t expert = 0; expert < routed[layer].size(); ++expert)
            sum[layer][expert] += routed[layer][expert];
}

// The model reports its routing to a step's RouterBalance while this lives.
class AttachedBalance {
public:
    AttachedBalance(LlamaForCausalLm& model, RouterBalance* balance)
        : m_model(model)
    {
        m_model.setRouterBalance(balance);
    }
    ~AttachedBalance() { m_model.setRouterBalance(nullptr); }
    AttachedBalance(const AttachedBalance&) = delete;
    AttachedBalance& operator=(const AttachedBalance&) = delete;

private:
    LlamaForCausalLm& m_model;
};

torch::Tensor tokenMask(const data::Batch& batch, const torch::Device& device)
{
    return torch::from_blob(const_cast<std::int32_t*>(batch.attentionMask.data()),
        {static_cast<std::int64_t>(batch.batchSize),
            static_cast<std::int64_t>(batch.sequenceLength)},
        torch::TensorOptions().dtype(torch::kInt))
        .to(device, torch::kFloat);
}

} // namespace

namespace {

// What a step's forwards add up, kept on the device until the step reads
// them, all at once (host_read.h).
struct StepSums {
    torch::Tensor loss; // double [1]: the normalised loss, plus the balancing term
    torch::Tensor routerAux; // double [1]; undefined without the balancing loss

    std::vector<torch::Tensor> figures() const
    {
        return routerAux.defined() ? std::vector<torch::Tensor>{loss, routerAux}
                                   : std::vector<torch::Tensor>{loss};
    }
    // `read` starts with figures(), in order.
    void fill(const std::vector<double>& read, StepResult& result) const
    {
        result.loss = read.at(0);
        if (routerAux.defined())
            result.routerAuxLoss = read.at(1);
    }
};

// The step's counts summed over every rank: one collective, one read.
std::vector<double> countsOfEveryRank(DataParallel& parallel, const std::vector<double>& counts)
{
    const torch::Tensor summed =
        parallel.sumOverWorld(torch::tensor(counts, torch::TensorOptions().dtype(torch::kDouble)));
    std::vector<torch::Tensor> each;
    for (std::int64_t i = 0; i < summed.numel(); ++i)
        each.push_back(summed[i]);
    return readToHost(each);
}

StepResult accumulate(LlamaForCausalLm& model, FlatParameters& parameters,
    const std::vector<data::Batch>& batches, std::int64_t lossChunkRows, DataParallel* parallel,
    StepSums& sums)
{
    StepResult result;
    for (const data::Batch& batch : batches) {
        result.lossTokens += static_cast<std::int64_t>(batch.lossTokens());
        result.tokens += static_cast<std::int64_t>(batch.tokens());
        result.samples += static_cast<std::int64_t>(batch.batchSize);
    }
    const auto skipped = [&](const data::Batch& batch) {
        return !parallel && (batch.isEmpty() || batch.lossTokens() == 0);
    };
    double forwards = 0.0;
    for (const data::Batch& batch : batches)
        forwards += !skipped(batch) && !batch.isEmpty() ? 1.0 : 0.0;
    double normalizer = static_cast<double>(result.lossTokens);
    result.globalTokens = result.tokens;
    if (parallel) {
        const std::vector<double> summed = countsOfEveryRank(
            *parallel, {normalizer, static_cast<double>(result.tokens), forwards});
        normalizer = summed[0];
        result.globalTokens = static_cast<std::int64_t>(summed[1]);
        forwards = summed[2];
    }
    normalizer = std::max(1.0, normalizer);
    const torch::Device device = model.outputWeight().device();
    const auto doubles = torch::TensorOptions().dtype(torch::kDouble).device(device);
    sums.loss = torch::zeros({1}, doubles);
    // transformers adds the load-balancing loss of each forward; a step
    // averages it over its forwards, so the coefficient means the same
    // whatever the accumulation and the number of ranks.
    const LlamaConfig& config = model.config();
    std::optional<RouterBalance> balance;
    const double balanceWeight = 1.0 / std::max(1.0, forwards); // every rank's forwards
    if (config.isMixtureOfExperts() && config.outputRouterLogits) {
        balance.emplace(config.numLayers, config.experts, config.expertsPerToken);
        sums.routerAux = torch::zeros({1}, doubles);
    }
    const AttachedBalance attached(model, balance ? &*balance : nullptr);
    // The micro-batch that ends the step: the last one one process runs.
    size_t last = batches.size();
    for (size_t b = batches.size(); b-- > 0;) {
        if (!skipped(batches[b])) {
            last = b;
            break;
        }
    }
    for (size_t b = 0; b < batches.size(); ++b) {
        const data::Batch& batch = batches[b];
        if (skipped(batch))
            continue;
        if (parallel)
            parallel->beginMicroStep(b == last);
        if (!batch.isEmpty()) {
            const auto [ids, labels] = batchTensors(batch, device);
            if (balance)
                balance->begin(tokenMask(batch, device), config.routerAuxLossCoef * balanceWeight);
            const torch::Tensor hidden = model.hiddenStates(ids);
            if (balance) {
                const torch::Tensor aux = balance->finish().to(torch::kDouble) * balanceWeight;
                sums.routerAux += aux;
                sums.loss += config.routerAuxLossCoef * aux;
            }
            torch::Tensor loss;
            if (batch.lossTokens() > 0) {
                const LossRows rows = selectLossRows(hidden, labels);
                loss = model.nextTokenLoss(rows, normalizer, lossChunkRows);
            } else {
                // Every rank runs the same backward, so the collectives of its
                // hooks match the other ranks' (zero gradients here).
                loss = hidden.sum() * 0.0 + model.outputWeight().sum() * 0.0;
            }
            loss.backward();
            sums.loss += loss.detach().to(torch::kDouble);
            addRouting(result.expertTokens, model.expertRouting());
        }
        if (parallel)
            parallel->endMicroStep();
        else
            parameters.accumulateGradients(b == last);
    }
    if (parallel) {
        const torch::Tensor summed = parallel->sumOverWorld(torch::cat(sums.figures()));
        sums.loss = summed.narrow(0, 0, 1);
        if (balance)
            sums.routerAux = summed.narrow(0, 1, 1);
    }
    return result;
}

} // namespace

StepResult accumulateStepGradients(LlamaForCausalLm& model, FlatParameters& parameters,
    const std::vector<data::Batch>& batches, std::int64_t lossChunkRows, DataParallel* parallel)
{
    StepSums sums;
    StepResult result = accumulate(model, parameters, batches, lossChunkRows, parallel, sums);
    sums.fill(readToHost(sums.figures()), result);
    return result;
}

StepResult trainStep(LlamaForCausalLm& model, FlatParameters& parameters, FlatAdamW& optimizer,
    const std::vector<data::Batch>& batches, double learningRate, double maxGradNorm,
    DataParallel* parallel)
{
    StepSums sums;
    StepResult result = accumulate(model, parameters, batches, 0, parallel, sums);
    sums.fill(updateAfterAccumulation(parameters, optimizer, sums.figures(), learningRate,
                  maxGradNorm, parallel, result.gradNorm),
        result);
    return result;
}

std::vector<double> updateAfterAccumulation(FlatParameters& parameters, FlatAdamW& optimizer,
    std::vector<torch::Tensor> figures, double learningRate, double maxGradNorm,
    DataParallel* parallel, double& gradNorm)
{
    // The step's one read: the logged figures and the norm that clipping and
    // the finiteness check need on the host.
    figures.push_back(parallel ? parallel->gradientSquares() : parameters.gradientSquares());
    std::vector<double> read = readToHost(figures);
    gradNorm = std::sqrt(read.back());
    read.pop_back();
    parameters.clipToNorm(gradNorm, maxGradNorm);
    if (std::isfinite(read.front()) && std::isfinite(gradNorm)) {
        optimizer.step(learningRate);
        if (parallel)
            parallel->afterOptimizerStep();
        else
            parameters.copyMasterToModel();
    }
    parameters.zeroGradients();
    return read;
}

EvalLossResult evaluateRows(LlamaForCausalLm& model, std::span<const data::TokenizedExample> rows,
    std::size_t microBatch, std::int32_t padId)
{
    EvalLossResult result;
    const bool wasTraining = model.is_training();
    model.eval();
    torch::NoGradGuard noGrad;
    const torch::Device device = model.outputWeight().device();
    torch::Tensor total =
        torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
    std::vector<std::size_t> indices;
    for (std::size_t first = 0; first < rows.size(); first += microBatch) {
        indices.resize(std::min(microBatch, rows.size() - first));
        std::iota(indices.begin(), indices.end(), first);
        const data::Batch batch = data::collate(rows, indices, {microBatch, padId, 0});
        const auto lossTokens = static_cast<std::int64_t>(batch.lossTokens());
        if (lossTokens == 0)
            continue;
        const auto [ids, labels] = batchTensors(batch, device);
        const LossRows selected = selectLossRows(model.hiddenStates(ids), labels);
        total += model.nextTokenLoss(selected, 1.0).to(torch::kDouble);
        result.lossTokens += lossTokens;
    }
    if (wasTraining)
        model.train();
    result.meanLoss = result.lossTokens > 0
        ? readToHost(total) / static_cast<double>(result.lossTokens)
        : std::nan("");
    return result;
}

} // namespace tb::train
