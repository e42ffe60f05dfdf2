#include "model/model_spec.h"

#include <sstream>

namespace tb::model {

namespace {

void requirePositive(std::vector<std::string>& problems, const char* field, std::int64_t value)
{
    if (value <= 0)
        problems.push_back(std::string(field) + ": got " + std::to_string(value)
            + ", expected a positive integer");
}

} // namespace

common::Status validateModelSpec(const ModelSpec& spec, const std::string& origin)
{
    std::vector<std::string> problems;
    requirePositive(problems, "hidden_size", spec.hiddenSize);
    requirePositive(problems, "intermediate_size", spec.intermediateSize);
    requirePositive(problems, "num_layers", spec.numLayers);
    requirePositive(problems, "num_heads", spec.numHeads);
    requirePositive(problems, "num_kv_heads", spec.numKvHeads);
    requirePositive(problems, "head_dim", spec.headDim);
    requirePositive(problems, "vocab_size", spec.vocabSize);
    if (spec.numHeads > 0 && spec.numKvHeads > 0 && spec.numHeads % spec.numKvHeads != 0)
        problems.push_back("num_kv_heads: " + std::to_string(spec.numKvHeads)
            + " does not divide num_heads " + std::to_string(spec.numHeads));
    if (spec.numKvHeads > spec.numHeads && spec.numHeads > 0)
        problems.push_back("num_kv_heads: " + std::to_string(spec.numKvHeads)
            + " is more than num_heads " + std::to_string(spec.numHeads));
    if (spec.normsPerLayer < 1 || spec.normsPerLayer > 8)
        problems.push_back(
            "norms_per_layer: got " + std::to_string(spec.normsPerLayer) + ", expected 1 to 8");
    // Sizes past these limits are not models anyone trains and would
    // overflow the int64 arithmetic of the counts (vocab x hidden x 2).
    constexpr std::int64_t kMaxDim = 1 << 20;
    constexpr std::int64_t kMaxVocab = 1 << 24;
    const auto tooLarge = [&](const char* field, std::int64_t value, std::int64_t limit) {
        if (value > limit)
            problems.push_back(std::string(field) + ": got " + std::to_string(value)
                + ", expected at most " + std::to_string(limit));
    };
    tooLarge("hidden_size", spec.hiddenSize, kMaxDim);
    tooLarge("intermediate_size", spec.intermediateSize, 4 * kMaxDim);
    tooLarge("num_layers", spec.numLayers, 4096);
    tooLarge("num_heads", spec.numHeads, 4096);
    tooLarge("num_kv_heads", spec.numKvHeads, 4096);
    tooLarge("head_dim", spec.headDim, 8192);
    tooLarge("vocab_size", spec.vocabSize, kMaxVocab);
    if (problems.empty())
        return common::Ok{};
    std::ostringstream message;
    for (size_t i = 0; i < problems.size(); ++i)
        message << (i ? "; " : "") << problems[i];
    return common::Error::at(origin, {}, message.str());
}

std::vector<LinearLayer> blockLinearLayers(const ModelSpec& spec)
{
    const std::int64_t h = spec.hiddenSize;
    const std::int64_t f = spec.intermediateSize;
    std::vector<LinearLayer> layers;
    if (spec.fusedQkv) {
        layers.push_back({"qkv_proj", h, spec.queryDim() + 2 * spec.kvDim(), spec.qkvBias});
    } else {
        layers.push_back({"q_proj", h, spec.queryDim(), spec.qkvBias});
        layers.push_back({"k_proj", h, spec.kvDim(), spec.qkvBias});
        layers.push_back({"v_proj", h, spec.kvDim(), spec.qkvBias});
    }
    layers.push_back({"o_proj", spec.queryDim(), h, spec.outputBias});
    if (spec.mlp == MlpKind::Gated) {
        if (spec.fusedQkv) {
            layers.push_back({"gate_up_proj", h, 2 * f, spec.mlpBias});
        } else {
            layers.push_back({"gate_proj", h, f, spec.mlpBias});
            layers.push_back({"up_proj", h, f, spec.mlpBias});
        }
    } else {
        layers.push_back({"up_proj", h, f, spec.mlpBias});
    }
    layers.push_back({"down_proj", f, h, spec.mlpBias});
    return layers;
}

} // namespace tb::model
