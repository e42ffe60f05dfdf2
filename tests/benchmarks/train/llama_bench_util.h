#pragma once

#include "train/model_config.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

// What the trainer benchmarks share: timing, the model they run, its FLOPs.
namespace tb::bench {

inline double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

template <typename Fn> double timed(Fn&& fn)
{
    const auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The stories15M shape of llama2.c: dim 288, 6 layers, 6 heads, SwiGLU 768,
// vocab 32000, tied embeddings (~15M parameters).
inline train::LlamaConfig stories15mShape()
{
    train::LlamaConfig config;
    config.modelType = "llama";
    config.architecture = "LlamaForCausalLM";
    config.vocabSize = 32000;
    config.hiddenSize = 288;
    config.intermediateSize = 768;
    config.numLayers = 6;
    config.numHeads = 6;
    config.numKvHeads = 6;
    config.headDim = 48;
    config.maxPositionEmbeddings = 1024;
    config.rmsNormEps = 1e-5;
    config.tieWordEmbeddings = true;
    return config;
}

// Forward FLOPs per token (PaLM appendix B, the forward third of
// 6N + 12 L d T): 2 N_matmul + 4 L d T, N_matmul counting every weight used in
// a matrix product (the tied output projection included, the embedding lookup
// not) and 4 L d T for Q K^T and P V over T positions.
inline double forwardFlopsPerToken(const train::LlamaConfig& c, std::int64_t tokens)
{
    const double q = double(c.numHeads * c.headDim);
    const double kv = double(c.numKvHeads * c.headDim);
    const double h = double(c.hiddenSize);
    const double perLayer = h * q + 2 * h * kv + q * h + 3 * h * double(c.intermediateSize);
    const double matmulWeights = double(c.numLayers) * perLayer + double(c.vocabSize) * h;
    return 2.0 * matmulWeights + 4.0 * double(c.numLayers) * q * double(tokens);
}

} // namespace tb::bench
