#pragma once

#include "common/error.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace tb::train {

class LlamaForCausalLm;

struct EvalOptions {
    // Longer sequences are cut to their first maxTokens ids (the protocol of
    // the stories260K reference: each document scored on its own, truncated).
    std::int64_t maxTokens = 512;
    std::int64_t batchSize = 8;
    // Called after each batch; returning false cancels.
    std::function<bool(std::int64_t doneSequences, std::int64_t totalSequences)> progress;
};

struct [[nodiscard]] EvalResult {
    double meanLoss = 0.0; // nats per predicted token
    double perplexity = 0.0; // exp(meanLoss)
    std::int64_t predictedTokens = 0;
    std::int64_t sequences = 0;
    std::int64_t truncatedSequences = 0;
    std::int64_t droppedTokens = 0; // cut off by maxTokens
    double seconds = 0.0;
};

// Mean next-token negative log-likelihood over every predicted position of
// every sequence (token i+1 given tokens 0..i; a sequence of n ids predicts
// n-1), accumulated in double. Sequences are batched by length with right
// padding, which causal attention never lets a real position see.
common::Result<EvalResult> evaluateLoss(LlamaForCausalLm& model,
    const std::vector<std::vector<std::int32_t>>& sequences, const EvalOptions& options);

} // namespace tb::train
