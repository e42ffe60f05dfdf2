#include "train/evaluation.h"

#include "train/host_read.h"
#include "train/llama_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace tb::train {

using common::Error;

namespace {

// Rows of logits materialised at once: bounds memory for large vocabularies
// (8192 rows x 128k vocab x 4 bytes = 4 GiB would be too many).
std::int64_t logitRowsPerChunk(std::int64_t vocabSize)
{
    return std::max<std::int64_t>(64, (std::int64_t(256) << 20) / (4 * vocabSize));
}

// Sum of -log p(target) over rows of `hidden` [rows, hiddenSize].
double summedNll(LlamaForCausalLm& model, const torch::Tensor& hidden, const torch::Tensor& targets)
{
    const auto lossType = model.dtype() == torch::kDouble ? torch::kDouble : torch::kFloat;
    const std::int64_t chunk = logitRowsPerChunk(model.config().vocabSize);
    double total = 0.0;
    for (std::int64_t begin = 0; begin < hidden.size(0); begin += chunk) {
        const std::int64_t end = std::min(begin + chunk, hidden.size(0));
        const torch::Tensor logits = model.logitsFrom(hidden.slice(0, begin, end)).to(lossType);
        const torch::Tensor nll =
            torch::nn::functional::cross_entropy(logits, targets.slice(0, begin, end),
                torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
        total += readToHost(nll);
    }
    return total;
}

} // namespace

common::Result<EvalResult> evaluateLoss(LlamaForCausalLm& model,
    const std::vector<std::vector<std::int32_t>>& sequences, const EvalOptions& options)
{
    if (options.maxTokens < 2 || options.batchSize < 1)
        return Error{"evaluation needs maxTokens >= 2 and batchSize >= 1", {}};
    const std::int64_t vocab = model.config().vocabSize;
    for (size_t i = 0; i < sequences.size(); ++i) {
        for (const std::int32_t id : sequences[i]) {
            if (id < 0 || id >= vocab)
                return Error{"sequence " + std::to_string(i) + ": token id " + std::to_string(id)
                        + " is outside the model's vocabulary of " + std::to_string(vocab),
                    "was the text tokenised with this model's tokenizer?"};
        }
    }

    const auto start = std::chrono::steady_clock::now();
    EvalResult result;
    result.sequences = static_cast<std::int64_t>(sequences.size());
    // Longest first so each batch pads little.
    std::vector<size_t> order(sequences.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
        [&](size_t a, size_t b) { return sequences[a].size() > sequences[b].size(); });

    double totalNll = 0.0;
    try {
        torch::NoGradGuard noGrad;
        for (size_t first = 0; first < order.size();
             first += static_cast<size_t>(options.batchSize)) {
            const size_t last =
                std::min(order.size(), first + static_cast<size_t>(options.batchSize));
            const auto width = std::min<std::int64_t>(
                options.maxTokens, static_cast<std::int64_t>(sequences[order[first]].size()));
            const auto rows = static_cast<std::int64_t>(last - first);
            if (width >= 2) {
                torch::Tensor ids = torch::zeros({rows, width}, torch::kLong);
                // -100: no target (padding), skipped by cross_entropy.
                torch::Tensor targets = torch::full({rows, width - 1}, -100, torch::kLong);
                auto idsView = ids.accessor<std::int64_t, 2>();
                auto targetView = targets.accessor<std::int64_t, 2>();
                for (std::int64_t r = 0; r < rows; ++r) {
                    const auto& sequence = sequences[order[first + static_cast<size_t>(r)]];
                    const auto used =
                        std::min<std::int64_t>(width, static_cast<std::int64_t>(sequence.size()));
                    for (std::int64_t t = 0; t < used; ++t) {
                        idsView[r][t] = sequence[static_cast<size_t>(t)];
                        if (t > 0)
                            targetView[r][t - 1] = sequence[static_cast<size_t>(t)];
                    }
                    result.predictedTokens += std::max<std::int64_t>(0, used - 1);
                }
                const torch::Device device = model.outputWeight().device();
                const torch::Tensor hidden =
                    model.hiddenStates(ids.to(device)).slice(1, 0, width - 1);
                // The rows to score, chosen from the host's targets.
                const torch::Tensor flatTargets = targets.reshape({-1});
                const torch::Tensor keep = flatTargets.ne(-100).nonzero().squeeze(1);
                totalNll += summedNll(model,
                    hidden.reshape({-1, hidden.size(-1)}).index_select(0, keep.to(device)),
                    flatTargets.index_select(0, keep).to(device));
            }
            if (options.progress
                && !options.progress(static_cast<std::int64_t>(last), result.sequences))
                return Error{"evaluation cancelled", {}};
        }
    } catch (const std::exception& e) {
        return Error{std::string("evaluation failed: ") + e.what(), {}};
    }
    for (const auto& sequence : sequences) {
        const auto length = static_cast<std::int64_t>(sequence.size());
        if (length > options.maxTokens) {
            ++result.truncatedSequences;
            result.droppedTokens += length - options.maxTokens;
        }
    }
    if (result.predictedTokens == 0)
        return Error{"no token to predict: every sequence has fewer than 2 tokens", {}};
    result.meanLoss = totalNll / static_cast<double>(result.predictedTokens);
    result.perplexity = std::exp(result.meanLoss);
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace tb::train
