#pragma once

#include "common/error.h"
#include "safetensors/dtype.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tb::safetensors {

// One tensor's entry in a header. Offsets are relative to the data region,
// which starts right after the header (byte 8 + headerBytes of the file).
struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t dataBegin = 0;
    uint64_t dataEnd = 0;

    uint64_t byteCount() const { return dataEnd - dataBegin; }
    uint64_t elementCount() const;
};

struct Header {
    std::vector<TensorInfo> tensors; // in data order (by dataBegin)
    std::map<std::string, std::string> metadata;
    uint64_t headerBytes = 0;

    uint64_t dataOffset() const { return 8 + headerBytes; }
};

// The reference implementation refuses headers above 100 MB; so do we, so that
// a corrupt length can never make us allocate gigabytes.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Reads the 8-byte little-endian header length and checks it against the
// file size and kMaxHeaderBytes.
common::Result<uint64_t> parseHeaderLength(
    std::string_view firstEightBytes, uint64_t fileBytes, const std::string& fileName);

// Parses and validates the JSON header: every entry's dtype, shape and
// data_offsets, sizes equal to shape x dtype size, offsets inside the data
// region of `dataBytes` bytes, in order, without overlap or holes, and
// __metadata__ as string to string. Errors name the file, the tensor and the
// field.
common::Result<Header> parseHeader(
    std::string_view json, uint64_t dataBytes, const std::string& fileName);

} // namespace tb::safetensors
