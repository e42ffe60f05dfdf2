#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tb::safetensors {

// The element types the safetensors format names. Sub-byte types (F4, F6_*)
// are recognised so that an error can name them, but are refused: their
// packing is not byte-addressable per element.
enum class DType {
    Bool,
    U8,
    I8,
    F8E4M3,
    F8E5M2,
    F8E8M0,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    F64,
    I64,
    U64,
};

// "F32", "BF16", ... as written in a header.
std::string_view dtypeName(DType dtype);
std::optional<DType> parseDType(std::string_view name);
int dtypeBytes(DType dtype);

// True for the names of sub-byte types we recognise but do not read.
bool isKnownUnsupportedDType(std::string_view name);

// "BOOL, U8, ..." for error messages.
std::string supportedDTypeList();

} // namespace tb::safetensors
