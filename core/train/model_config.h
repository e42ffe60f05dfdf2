#pragma once

#include "common/error.h"
#include "model/hf_config.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace tb::train {

using model::RopeScaling;
using model::RopeScalingType;

// A Hugging Face config.json of a Llama-family decoder this runner computes
// exactly (llama, mistral, qwen2, qwen3, gemma2, gemma3_text: Llama 2/3,
// TinyLlama, SmolLM, Mistral, Qwen2, Qwen2.5, Qwen3's dense models, Gemma 2
// and Gemma 3's text models). The numbers are core/model's reading of the
// file, the same the planner counts; no LibTorch here: the CLI reads it too.
struct LlamaConfig : model::HfConfig {
    std::int64_t kvGroupSize() const { return numHeads / numKvHeads; }
    // Exact count of the parameters the model holds (tied weights once).
    std::int64_t parameterCount() const;
};

// Checks that the runner computes `config` exactly. Refused with the field
// and value: an unknown architecture or model_type, another activation than
// the family's, rope scaling other than linear or llama3, quantisation,
// sliding-window layers other than Mistral's and Gemma's, bidirectional
// attention, an odd head size, a multimodal config.
common::Result<LlamaConfig> llamaConfigFrom(model::HfConfig config);

// Reads config.json through model::parseHfModelConfig, then llamaConfigFrom().
common::Result<LlamaConfig> parseLlamaConfig(std::string_view json, const std::string& fileName);

// `path` is a config.json or the model folder that holds it.
common::Result<LlamaConfig> loadLlamaConfig(const std::string& path);

} // namespace tb::train
