#include "train/generation.h"

#include "train/llama_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tb::train {

using common::Error;

namespace {

// splitmix64 (Steele, Lea, Flood 2014): small, fast, the same everywhere.
std::uint64_t nextRandom(std::uint64_t& state)
{
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double uniform01(std::uint64_t& state)
{
    return static_cast<double>(nextRandom(state) >> 11) * 0x1.0p-53;
}

std::vector<double> lastLogits(LlamaForCausalLm& model, const torch::Tensor& ids, KvCache& cache)
{
    const torch::Tensor hidden = model.hiddenStates(ids, &cache);
    const torch::Tensor logits = model.logitsFrom(hidden.select(1, hidden.size(1) - 1))
                                     .to(torch::kCPU, torch::kDouble)
                                     .contiguous();
    const double* data = logits.data_ptr<double>();
    return std::vector<double>(data, data + logits.numel());
}

} // namespace

std::int32_t pickToken(
    const std::vector<double>& logits, double temperature, double topP, std::uint64_t& rngState)
{
    if (temperature <= 0.0)
        return static_cast<std::int32_t>(
            std::max_element(logits.begin(), logits.end()) - logits.begin());
    const double peak = *std::max_element(logits.begin(), logits.end());
    std::vector<double> weights(logits.size());
    for (size_t i = 0; i < logits.size(); ++i)
        weights[i] = std::exp((logits[i] - peak) / temperature);
    std::vector<std::int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
        return weights[static_cast<size_t>(a)] > weights[static_cast<size_t>(b)];
    });
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    // Keep the most likely tokens until their mass reaches topP (at least one).
    size_t kept = 0;
    double mass = 0.0;
    while (kept < order.size() && (kept == 0 || mass < topP * total)) {
        mass += weights[static_cast<size_t>(order[kept])];
        ++kept;
    }
    double target = uniform01(rngState) * mass;
    for (size_t i = 0; i < kept; ++i) {
        target -= weights[static_cast<size_t>(order[i])];
        if (target < 0.0)
            return order[i];
    }
    return order[kept - 1];
}

common::Result<std::vector<std::int32_t>> generate(LlamaForCausalLm& model,
    const std::vector<std::int32_t>& prompt, const GenerateOptions& options)
{
    if (prompt.empty())
        return Error{"generation needs at least one prompt token", "add the BOS token"};
    const std::int64_t vocab = model.config().vocabSize;
    for (const std::int32_t id : prompt) {
        if (id < 0 || id >= vocab)
            return Error{"prompt token id " + std::to_string(id) + " is outside the vocabulary of "
                    + std::to_string(vocab),
                {}};
    }
    if (options.temperature < 0.0 || !(options.topP > 0.0 && options.topP <= 1.0))
        return Error{"temperature must be >= 0 and top-p in (0, 1]", {}};
    const std::int64_t room =
        model.config().maxPositionEmbeddings - static_cast<std::int64_t>(prompt.size());
    const std::int64_t steps = std::min(options.maxNewTokens, room);

    std::vector<std::int32_t> produced;
    std::uint64_t rng = options.seed;
    try {
        torch::NoGradGuard noGrad;
        KvCache cache;
        std::vector<std::int64_t> promptIds(prompt.begin(), prompt.end());
        const torch::Device device = model.outputWeight().device();
        torch::Tensor input = torch::tensor(promptIds, torch::kLong).unsqueeze(0).to(device);
        for (std::int64_t step = 0; step < steps; ++step) {
            const std::vector<double> logits = lastLogits(model, input, cache);
            const std::int32_t id = pickToken(logits, options.temperature, options.topP, rng);
            produced.push_back(id);
            const bool stop = std::find(options.stopIds.begin(), options.stopIds.end(), id)
                != options.stopIds.end();
            if ((options.onToken && !options.onToken(id)) || stop)
                break;
            input = torch::full({1, 1}, static_cast<std::int64_t>(id),
                torch::TensorOptions().dtype(torch::kLong).device(device));
        }
    } catch (const std::exception& e) {
        return Error{std::string("generation failed: ") + e.what(), {}};
    }
    return produced;
}

} // namespace tb::train
