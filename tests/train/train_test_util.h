#pragma once

#include "../support/test_data.h"
#include "train/llama_model.h"
#include "train/model_config.h"

#include <torch/torch.h>

#include <filesystem>
#include <string>

// Shared by the trainer suites: tiny configs and tensor helpers.
namespace tb::train::testutil {

// Small enough for float64 finite differences, with every feature on:
// grouped K/V (4 query heads on 2), head_dim given and unequal to
// hidden/heads, q/k/v biases (Qwen2), untied head.
inline LlamaConfig tinyConfig()
{
    LlamaConfig config;
    config.modelType = "qwen2";
    config.vocabSize = 29;
    config.hiddenSize = 12;
    config.intermediateSize = 20;
    config.numLayers = 2;
    config.numHeads = 4;
    config.numKvHeads = 2;
    config.headDim = 6;
    config.maxPositionEmbeddings = 64;
    config.rmsNormEps = 1e-6;
    config.ropeTheta = 10000.0;
    config.qkvBias = true;
    return config;
}

// Llama-style variant: tied embeddings, Llama 3 rope scaling, no biases.
inline LlamaConfig tinyTiedConfig()
{
    LlamaConfig config = tinyConfig();
    config.modelType = "llama";
    config.qkvBias = false;
    config.tieWordEmbeddings = true;
    config.ropeTheta = 500000.0;
    config.ropeScaling.type = RopeScalingType::Llama3;
    config.ropeScaling.factor = 8.0;
    config.ropeScaling.lowFreqFactor = 1.0;
    config.ropeScaling.highFreqFactor = 4.0;
    config.ropeScaling.originalMaxPositionEmbeddings = 16;
    return config;
}

inline torch::Tensor ids(const std::vector<std::int64_t>& values)
{
    return torch::tensor(values, torch::kLong).unsqueeze(0);
}

inline double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

inline std::string demoModelDir()
{
    return tb::test::demoModelDir();
}

} // namespace tb::train::testutil

namespace tb::train::testutil {

// A config.json for `config`, as transformers would write the fields we read.
inline std::string configJson(const LlamaConfig& config)
{
    std::string rope = "null";
    if (config.ropeScaling.type == RopeScalingType::Llama3)
        rope = "{\"rope_type\":\"llama3\",\"factor\":" + std::to_string(config.ropeScaling.factor)
            + ",\"low_freq_factor\":" + std::to_string(config.ropeScaling.lowFreqFactor)
            + ",\"high_freq_factor\":" + std::to_string(config.ropeScaling.highFreqFactor)
            + ",\"original_max_position_embeddings\":"
            + std::to_string(config.ropeScaling.originalMaxPositionEmbeddings) + "}";
    std::string text = "{\"model_type\":\"" + config.modelType + "\"";
    text += ",\"vocab_size\":" + std::to_string(config.vocabSize);
    text += ",\"hidden_size\":" + std::to_string(config.hiddenSize);
    text += ",\"intermediate_size\":" + std::to_string(config.intermediateSize);
    text += ",\"num_hidden_layers\":" + std::to_string(config.numLayers);
    text += ",\"num_attention_heads\":" + std::to_string(config.numHeads);
    text += ",\"num_key_value_heads\":" + std::to_string(config.numKvHeads);
    text += ",\"head_dim\":" + std::to_string(config.headDim);
    text += ",\"max_position_embeddings\":" + std::to_string(config.maxPositionEmbeddings);
    text += ",\"rms_norm_eps\":1e-06,\"rope_theta\":" + std::to_string(config.ropeTheta);
    text += ",\"rope_scaling\":" + rope;
    text +=
        std::string(",\"tie_word_embeddings\":") + (config.tieWordEmbeddings ? "true" : "false");
    if (config.modelType == "llama")
        text += std::string(",\"attention_bias\":") + (config.qkvBias ? "true" : "false");
    return text + "}";
}

} // namespace tb::train::testutil
