#pragma once

#include "model/model_spec.h"

#include <cstdint>

namespace tb::model {

// Exact parameter counts of a ModelSpec, part by part. Integer arithmetic
// throughout, so totals equal the published figures to the last parameter.
struct ParameterCount {
    std::int64_t embedding = 0; // vocab x hidden
    std::int64_t attentionPerLayer = 0; // q, k, v, o (+ biases, + q/k norms)
    std::int64_t mlpPerLayer = 0; // gate, up, down (+ biases)
    std::int64_t normsPerLayer = 0;
    std::int64_t perLayer = 0; // attention + mlp + norms
    std::int64_t layers = 0; // perLayer x numLayers
    std::int64_t finalNorm = 0;
    std::int64_t lmHead = 0; // 0 when tied to the embedding
    std::int64_t total = 0;

    // Parameters that take part in matrix multiplies each token (every block
    // linear layer a token runs through and the output projection, tied or
    // not): the N of 6N. A mixture of experts counts its top-k experts.
    std::int64_t matmul = 0;
    // The largest single module (embedding, lm_head or one linear layer, one
    // expert's): DeepSpeed's ZeRO-3 estimator sizes its gather buffers by it.
    std::int64_t largestLayer = 0;
    // Parameters in the blocks' linear layers only, every expert's (what
    // QLoRA quantises, with the router).
    std::int64_t blockLinear = 0;
    // The block linear parameters one token runs through (blockLinear for a
    // dense model; the router and top-k experts for a mixture of experts).
    std::int64_t blockActive = 0;
    std::int64_t routerPerLayer = 0; // a mixture of experts' router; 0 when dense
    // The total with only the experts a token runs through: what a mixture
    // of experts' "active parameters" means (Qwen3-30B-A3B: 3.3 B).
    std::int64_t active = 0;
};

ParameterCount countParameters(const ModelSpec& spec);

} // namespace tb::model
