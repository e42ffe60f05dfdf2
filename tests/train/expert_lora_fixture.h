// What the expert-LoRA suites share: a tiny mixture of experts (4 experts, 2
// a token) and a LoRA spec on attention plus the given expert weights.
#pragma once

#include "train/lora.h"
#include "train/model_config.h"
#include "train_test_util.h"

#include <string>
#include <vector>

namespace tb::test {

inline const std::vector<std::string> kAttention = {"q_proj", "k_proj", "v_proj", "o_proj"};

inline tb::train::LlamaConfig tinyMoeConfig(const std::string& modelType)
{
    tb::train::LlamaConfig config = tb::train::testutil::tinyTiedConfig();
    config.modelType = modelType;
    config.ropeScaling = {};
    config.experts = 4;
    config.expertsPerToken = 2;
    config.expertIntermediateSize = 8;
    config.normTopkProb = modelType == "mixtral";
    return config;
}

inline tb::train::LoraSpec expertSpec(std::vector<std::string> parameters, double dropout = 0.0)
{
    tb::train::LoraSpec spec;
    spec.rank = 3;
    spec.alpha = 6.0;
    spec.dropout = dropout;
    spec.targetModules = kAttention;
    spec.targetParameters = std::move(parameters);
    return spec;
}

} // namespace tb::test
