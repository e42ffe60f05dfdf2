#pragma once

#include "common/error.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace tb::train {

class LlamaForCausalLm;

struct GenerateOptions {
    std::int64_t maxNewTokens = 128;
    double temperature = 0.0; // 0: greedy (argmax, lowest id on ties)
    double topP = 1.0; // nucleus sampling (Holtzman et al. 2019) when sampling
    std::uint64_t seed = 0;
    std::vector<std::int32_t> stopIds; // generation ends after one of these (EOS)
    // Called with each new id; returning false stops (a CLI streams text here).
    std::function<bool(std::int32_t id)> onToken;
};

// Continues `prompt` (ids, BOS included when the model expects one) with the
// KV cache; returns the new ids only. Stops at maxNewTokens, a stop id, or
// the model's max_position_embeddings. The same seed gives the same text on
// every machine: sampling uses our own generator, not LibTorch's.
common::Result<std::vector<std::int32_t>> generate(LlamaForCausalLm& model,
    const std::vector<std::int32_t>& prompt, const GenerateOptions& options);

// The sampling step alone, on one row of logits: exposed for tests.
std::int32_t pickToken(
    const std::vector<double>& logits, double temperature, double topP, std::uint64_t& rngState);

} // namespace tb::train
