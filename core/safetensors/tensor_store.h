#pragma once

#include "common/error.h"
#include "safetensors/safetensors_file.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::safetensors {

// The weights of a model: one .safetensors file or the shards named by a
// model.safetensors.index.json, seen as one set of uniquely named tensors.
class TensorStore {
public:
    // `path` is a model folder (holding model.safetensors.index.json or
    // model.safetensors), a .safetensors file or an index .json file. Every
    // file is validated; with an index, each listed tensor must be in the
    // shard the index names and every tensor of a shard must be listed.
    static common::Result<TensorStore> open(const std::string& path);

    // Re-keys every tensor by `rename`: the stored name to the name the
    // model reads it by, or nullopt to leave the tensor out (a multimodal
    // checkpoint's vision tower under its language model). Two tensors
    // given one name are refused, naming both.
    common::Status rename(
        const std::function<std::optional<std::string>(std::string_view stored)>& rename);
    // How many tensors rename left out.
    size_t leftOutCount() const { return m_leftOut; }

    std::vector<std::string> names() const; // sorted
    size_t tensorCount() const { return m_index.size(); }
    const TensorInfo* find(std::string_view name) const;
    // The file that holds `name`, empty when absent.
    std::string fileOf(std::string_view name) const;
    const std::vector<SafetensorsFile>& files() const { return m_files; }

    common::Status read(std::string_view name, std::span<std::byte> out) const;
    // Bytes [byteOffset, byteOffset + out.size()) of tensor `name`.
    common::Status readRange(
        std::string_view name, uint64_t byteOffset, std::span<std::byte> out) const;
    // Tensor bytes read through this store so far (what a sharded load
    // proves it kept to its share with).
    uint64_t bytesRead() const { return m_bytesRead; }

private:
    struct Location {
        size_t file = 0;
        size_t tensor = 0; // index into that file's tensors()
    };
    common::Status addFile(SafetensorsFile file);

    std::vector<SafetensorsFile> m_files;
    std::map<std::string, Location, std::less<>> m_index;
    mutable uint64_t m_bytesRead = 0;
    size_t m_leftOut = 0;
};

} // namespace tb::safetensors
