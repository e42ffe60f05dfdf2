#pragma once

#include "model/model_spec.h"

#include <cstdint>

// Parts of one family that ModelSpec has no field for, selected by its
// model_type. They live here rather than in ModelSpec because only the
// planner counts them: the trainer, whose every unit includes ModelSpec's
// header, refuses these families (trainer_families.h).
namespace tb::model {

// gpt-oss: one learned logit per query head and layer that joins each row
// of the attention scores before the softmax (transformers' `sinks`).
std::int64_t attentionSinksPerLayer(const ModelSpec& spec);

// gpt-oss: the router carries a bias, one per expert.
bool routerHasBias(const ModelSpec& spec);

// gpt-oss: the experts' weights (not their biases) are published in MXFP4,
// OCP Microscaling's FP4: 4-bit e2m1 values and one 8-bit e8m0 scale per
// block of 32, 4.25 bits a weight.
bool expertsPublishedInMxfp4(const ModelSpec& spec);
inline constexpr double kMxfp4BitsPerWeight = 4.0 + 8.0 / 32.0;

} // namespace tb::model
