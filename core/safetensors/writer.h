#pragma once

#include "common/error.h"
#include "safetensors/dtype.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
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

// A tensor's place in a streamed file; its bytes come later.
struct TensorLayout {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
};

// A .safetensors file written a tensor at a time, for weights too large to
// hold at once (a sharded run's export, gathered a unit at a time): the
// header is written from the layouts at open, in their order (give the
// widest dtypes first to keep every tensor aligned), then append() takes
// each tensor's bytes in that same order, and commit() renames the
// temporary file over `path`. Destroyed uncommitted, it leaves `path` as it
// was.
class SafetensorsStream {
public:
    static common::Result<SafetensorsStream> open(const std::string& path,
        const std::vector<TensorLayout>& layouts,
        const std::map<std::string, std::string>& metadata = {});
    SafetensorsStream(SafetensorsStream&&) noexcept;
    SafetensorsStream& operator=(SafetensorsStream&&) noexcept;
    ~SafetensorsStream();

    // The next tensor's bytes: `name` must be the next layout's and the size
    // its shape's.
    common::Status append(const std::string& name, std::span<const std::byte> bytes);
    // Every tensor appended: flush, rename, done.
    common::Status commit();

private:
    class File;
    SafetensorsStream(
        std::string path, std::vector<TensorLayout> layouts, std::unique_ptr<File> file);

    std::string m_path;
    std::vector<TensorLayout> m_layouts;
    std::unique_ptr<File> m_file;
    size_t m_next = 0;
};

// Writes a model.safetensors.index.json for sharded weights (tensor name ->
// shard file name), atomically.
common::Status writeShardIndex(const std::string& path,
    const std::map<std::string, std::string>& shardOfTensor, uint64_t totalBytes);

} // namespace tb::safetensors
