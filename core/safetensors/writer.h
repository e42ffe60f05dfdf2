#pragma once

#include "common/error.h"
#include "safetensors/dtype.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tb::safetensors {

// A tensor to write: its raw little-endian bytes, which must number exactly
// shape x dtype size. The bytes are only borrowed until the write returns.
struct TensorToWrite {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    std::span<const std::byte> bytes;
};

// Writes a .safetensors file atomically: streamed to a temporary file beside
// `path`, flushed, then renamed over it, so a reader or a crash sees the old
// file or the new one. Tensors are laid out widest dtype first, then by name,
// and the header is padded with spaces so every tensor starts at a multiple
// of its element size (as the reference writer does).
common::Status writeSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
    const std::map<std::string, std::string>& metadata = {});

// Writes a model.safetensors.index.json for sharded weights (tensor name ->
// shard file name), atomically.
common::Status writeShardIndex(const std::string& path,
    const std::map<std::string, std::string>& shardOfTensor, uint64_t totalBytes);

} // namespace tb::safetensors
