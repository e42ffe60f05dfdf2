#pragma once

#include "train/model_config.h"

#include <vector>

namespace tb::train {

// Rotary inverse frequencies for one head, rotaryDim() / 2 of them, with the
// config's theta and scaling applied, in double precision:
// inv_freq[i] = theta^(-2i / headDim) (RoFormer, Su et al. 2021); linear
// scaling divides them by `factor`; Llama 3 scaling divides the low
// frequencies (wavelength above original_max_position_embeddings /
// low_freq_factor) by `factor`, keeps the high ones (wavelength below
// original / high_freq_factor) and blends linearly between, as in Meta's
// reference (llama-models, apply_scaling) and transformers'
// _compute_llama3_parameters.
std::vector<double> ropeInverseFrequencies(const LlamaConfig& config);

// The same for `rotaryDim` rotating dimensions with `theta` and `scaling`
// (Gemma 3's sliding-window layers rotate with a base of their own). Under
// LongRoPE, inv_freq[i] = 1 / (factor[i] theta^(2i / rotaryDim)) with the
// short factors, or the long ones when `longContext`.
std::vector<double> ropeInverseFrequencies(
    std::int64_t rotaryDim, double theta, const RopeScaling& scaling, bool longContext = false);

} // namespace tb::train
