#pragma once

#include "common/error.h"
#include "safetensors/header_parser.h"

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tb::safetensors {

// One .safetensors file, opened read-only. The header is parsed and validated
// at open; tensor bytes are read on request with pread, so a file that is
// truncated or replaced after opening gives an error, never a read outside it
// (an mmap would turn that into SIGBUS).
class SafetensorsFile {
public:
    static common::Result<SafetensorsFile> open(const std::string& path);

    SafetensorsFile(SafetensorsFile&& other) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;
    ~SafetensorsFile();

    const std::string& path() const { return m_path; }
    uint64_t fileBytes() const { return m_fileBytes; }
    const Header& header() const { return m_header; }
    const std::vector<TensorInfo>& tensors() const { return m_header.tensors; }
    const std::map<std::string, std::string>& metadata() const { return m_header.metadata; }

    const TensorInfo* find(std::string_view name) const;

    // Copies the tensor's raw (little-endian) bytes into `out`, which must be
    // exactly tensor.byteCount() long.
    common::Status read(const TensorInfo& tensor, std::span<std::byte> out) const;
    // Copies bytes [byteOffset, byteOffset + out.size()) of the tensor: a
    // slice of it, for a rank that loads only its shard.
    common::Status readRange(
        const TensorInfo& tensor, uint64_t byteOffset, std::span<std::byte> out) const;
    common::Result<std::vector<std::byte>> readBytes(std::string_view name) const;

private:
    SafetensorsFile() = default;
    void close();

    std::string m_path;
    int m_fd = -1;
    uint64_t m_fileBytes = 0;
    Header m_header;
    std::unordered_map<std::string_view, size_t> m_byName; // views into m_header.tensors
};

} // namespace tb::safetensors
