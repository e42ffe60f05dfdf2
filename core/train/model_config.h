#pragma once

#include "common/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::train {

enum class RopeScalingType {
    None,
    Linear, // positions divided by `factor`
    Llama3, // Llama 3.1's per-frequency blend of scaled and unscaled frequencies
};

struct RopeScaling {
    RopeScalingType type = RopeScalingType::None;
    double factor = 1.0;
    double lowFreqFactor = 1.0;
    double highFreqFactor = 4.0;
    std::int64_t originalMaxPositionEmbeddings = 0;
};

// What the runner needs from a Hugging Face config.json of a Llama-family
// decoder (llama, mistral, qwen2: Llama 2/3, TinyLlama, SmolLM, Mistral,
// Qwen2 and Qwen2.5). No LibTorch here: the CLI and the planner read it too.
struct LlamaConfig {
    std::string modelType; // llama, mistral, qwen2
    std::string architecture; // LlamaForCausalLM, ...

    std::int64_t vocabSize = 0;
    std::int64_t hiddenSize = 0;
    std::int64_t intermediateSize = 0;
    std::int64_t numLayers = 0;
    std::int64_t numHeads = 0;
    std::int64_t numKvHeads = 0;
    std::int64_t headDim = 0;
    std::int64_t maxPositionEmbeddings = 0;

    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;
    RopeScaling ropeScaling;

    bool tieWordEmbeddings = false;
    bool qkvBias = false; // Qwen2 always; Llama with attention_bias
    bool outputBias = false; // Llama with attention_bias
    bool mlpBias = false;
    // Mistral v0.1 attends to the last `slidingWindow` positions only.
    std::optional<std::int64_t> slidingWindow;

    std::optional<std::int64_t> bosTokenId;
    std::vector<std::int64_t> eosTokenIds;
    std::string torchDtype; // as stored ("bfloat16"); informative only

    std::int64_t kvGroupSize() const { return numHeads / numKvHeads; }
    // Exact count of the parameters the model holds (tied weights once).
    std::int64_t parameterCount() const;
};

// Parses and checks a config.json. A config we cannot run exactly is refused
// with the field and value (an unknown architecture or model_type, another
// activation, rope scaling other than linear or llama3, quantisation, Qwen2's
// sliding-window layers), and every number is checked for consistency.
common::Result<LlamaConfig> parseLlamaConfig(std::string_view json, const std::string& fileName);

// `path` is a config.json or the model folder that holds it.
common::Result<LlamaConfig> loadLlamaConfig(const std::string& path);

} // namespace tb::train
