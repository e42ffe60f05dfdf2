#include "safetensors/dtype.h"

#include <array>

namespace tb::safetensors {

namespace {

struct DTypeInfo {
    DType dtype;
    std::string_view name;
    int bytes;
};

// Names and sizes from the safetensors format description (huggingface/safetensors, Dtype enum).
constexpr std::array<DTypeInfo, 16> kDTypes{{
    {DType::Bool, "BOOL", 1},
    {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},
    {DType::F8E4M3, "F8_E4M3", 1},
    {DType::F8E5M2, "F8_E5M2", 1},
    {DType::F8E8M0, "F8_E8M0", 1},
    {DType::I16, "I16", 2},
    {DType::U16, "U16", 2},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::I32, "I32", 4},
    {DType::U32, "U32", 4},
    {DType::F32, "F32", 4},
    {DType::F64, "F64", 8},
    {DType::I64, "I64", 8},
    {DType::U64, "U64", 8},
}};

} // namespace

std::string_view dtypeName(DType dtype)
{
    for (const DTypeInfo& info : kDTypes) {
        if (info.dtype == dtype)
            return info.name;
    }
    return "?";
}

std::optional<DType> parseDType(std::string_view name)
{
    for (const DTypeInfo& info : kDTypes) {
        if (info.name == name)
            return info.dtype;
    }
    return std::nullopt;
}

int dtypeBytes(DType dtype)
{
    for (const DTypeInfo& info : kDTypes) {
        if (info.dtype == dtype)
            return info.bytes;
    }
    return 0;
}

bool isKnownUnsupportedDType(std::string_view name)
{
    return name == "F4" || name == "F6_E2M3" || name == "F6_E3M2";
}

std::string supportedDTypeList()
{
    std::string list;
    for (const DTypeInfo& info : kDTypes) {
        if (!list.empty())
            list += ", ";
        list += info.name;
    }
    return list;
}

} // namespace tb::safetensors
