#include "model/model_spec.h"

#include "model/family_parts.h"

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
    if (spec.isMixtureOfExperts()) {
        requirePositive(problems, "expert_intermediate_size", spec.expertIntermediateSize);
        tooLarge("expert_intermediate_size", spec.expertIntermediateSize, 4 * kMaxDim);
        tooLarge("experts", spec.experts, 4096);
        if (spec.expertsPerToken < 1 || spec.expertsPerToken > spec.experts)
            problems.push_back("experts_per_token: got " + std::to_string(spec.expertsPerToken)
                + ", expected 1 to the number of experts (" + std::to_string(spec.experts) + ")");
    }
    if (problems.empty())
        return common::Ok{};
    std::ostringstream message;
    for (size_t i = 0; i < problems.size(); ++i)
        message << (i ? "; " : "") << problems[i];
    return common::Error::at(origin, {}, message.str());
}

int blockLinearShapes(const ModelSpec& spec, LinearShape (&out)[kMaxBlockLinears])
{
    const std::int64_t h = spec.hiddenSize;
    const std::int64_t f = spec.intermediateSize;
    int n = 0;
    if (spec.fusedQkv) {
        out[n++] = {LinearKind::Qkv, h, spec.queryDim() + 2 * spec.kvDim(), spec.qkvBias};
    } else {
        out[n++] = {LinearKind::Q, h, spec.queryDim(), spec.qkvBias};
        out[n++] = {LinearKind::K, h, spec.kvDim(), spec.qkvBias};
        out[n++] = {LinearKind::V, h, spec.kvDim(), spec.qkvBias};
    }
    out[n++] = {LinearKind::O, spec.queryDim(), h, spec.outputBias};
    if (spec.isMixtureOfExperts()) {
        const std::int64_t e = spec.experts, k = spec.expertsPerToken;
        const std::int64_t fe = spec.expertIntermediateSize;
        out[n++] = {LinearKind::Router, h, e, routerHasBias(spec)};
        out[n++] = {LinearKind::Gate, h, fe, spec.mlpBias, e, k};
        out[n++] = {LinearKind::Up, h, fe, spec.mlpBias, e, k};
        out[n++] = {LinearKind::Down, fe, h, spec.mlpBias, e, k};
        return n;
    }
    if (spec.mlp == MlpKind::Gated) {
        if (spec.fusedQkv) {
            out[n++] = {LinearKind::GateUp, h, 2 * f, spec.mlpBias};
        } else {
            out[n++] = {LinearKind::Gate, h, f, spec.mlpBias};
            out[n++] = {LinearKind::Up, h, f, spec.mlpBias};
        }
    } else {
        out[n++] = {LinearKind::Up, h, f, spec.mlpBias};
    }
    out[n++] = {LinearKind::Down, f, h, spec.mlpBias};
    return n;
}

const char* linearName(LinearKind kind)
{
    switch (kind) {
    case LinearKind::Q:
        return "q_proj";
    case LinearKind::K:
        return "k_proj";
    case LinearKind::V:
        return "v_proj";
    case LinearKind::Qkv:
        return "qkv_proj";
    case LinearKind::O:
        return "o_proj";
    case LinearKind::Gate:
        return "gate_proj";
    case LinearKind::Up:
        return "up_proj";
    case LinearKind::GateUp:
        return "gate_up_proj";
    case LinearKind::Down:
        return "down_proj";
    case LinearKind::Router:
        return "gate";
    }
    return "?";
}

std::optional<LinearKind> linearKindNamed(const std::string& name)
{
    for (const LinearKind kind : {LinearKind::Q, LinearKind::K, LinearKind::V, LinearKind::Qkv,
             LinearKind::O, LinearKind::Gate, LinearKind::Up, LinearKind::GateUp, LinearKind::Down})
        if (name == linearName(kind))
            return kind;
    return std::nullopt;
}

bool targetSelects(const std::string& name, LinearKind kind)
{
    if (name == linearName(kind))
        return true;
    const std::optional<LinearKind> part = linearKindNamed(name);
    if (!part)
        return false;
    if (kind == LinearKind::Qkv)
        return *part == LinearKind::Q || *part == LinearKind::K || *part == LinearKind::V;
    if (kind == LinearKind::GateUp)
        return *part == LinearKind::Gate || *part == LinearKind::Up;
    return false;
}

bool isAttentionLinear(LinearKind kind)
{
    return kind == LinearKind::Q || kind == LinearKind::K || kind == LinearKind::V
        || kind == LinearKind::Qkv || kind == LinearKind::O;
}

std::vector<LinearLayer> blockLinearLayers(const ModelSpec& spec)
{
    LinearShape shapes[kMaxBlockLinears];
    const int n = blockLinearShapes(spec, shapes);
    std::vector<LinearLayer> layers;
    layers.reserve(size_t(n));
    for (int i = 0; i < n; ++i)
        layers.push_back({linearName(shapes[i].kind), shapes[i].inFeatures, shapes[i].outFeatures,
            shapes[i].bias, shapes[i].copies});
    return layers;
}

} // namespace tb::model
