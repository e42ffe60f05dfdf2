#pragma once

#include "common/error.h"

#include <string_view>

namespace tb::train {

// The dtype a model computes in. Named here without LibTorch so the CLI and
// configs can choose one.
enum class ComputeDType { Float32, BFloat16, Float16, Float64 };

std::string_view computeDTypeName(ComputeDType dtype); // "float32", ...
// "fp32"/"float32", "bf16"/"bfloat16", "fp16"/"float16"/"half", "fp64"/"float64".
common::Result<ComputeDType> parseComputeDType(std::string_view text);

} // namespace tb::train
