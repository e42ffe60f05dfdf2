#include "train/compute_dtype.h"

#include <string>

namespace tb::train {

std::string_view computeDTypeName(ComputeDType dtype)
{
    switch (dtype) {
    case ComputeDType::Float32:
        return "float32";
    case ComputeDType::BFloat16:
        return "bfloat16";
    case ComputeDType::Float16:
        return "float16";
    case ComputeDType::Float64:
        return "float64";
    }
    return "?";
}

common::Result<ComputeDType> parseComputeDType(std::string_view text)
{
    if (text == "fp32" || text == "float32")
        return ComputeDType::Float32;
    if (text == "bf16" || text == "bfloat16")
        return ComputeDType::BFloat16;
    if (text == "fp16" || text == "float16" || text == "half")
        return ComputeDType::Float16;
    if (text == "fp64" || text == "float64")
        return ComputeDType::Float64;
    return common::Error{
        "unknown dtype '" + std::string(text) + "'", "expected fp32, bf16, fp16 or fp64"};
}

} // namespace tb::train
