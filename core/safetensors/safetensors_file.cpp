#include "safetensors/safetensors_file.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tb::safetensors {

using common::Error;
using common::Result;
using common::Status;

// safetensors stores little-endian bytes; we hand them to callers as they are.
static_assert(std::endian::native == std::endian::little,
    "the safetensors reader assumes a little-endian host");

namespace {

// Reads exactly `size` bytes at `offset` or says why not.
Status preadAll(int fd, std::byte* out, uint64_t size, uint64_t offset, const std::string& path,
    const std::string& what)
{
    while (size > 0) {
        const ssize_t got = ::pread(fd, out, size, static_cast<off_t>(offset));
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return Error::at(path, what, std::string("read failed: ") + std::strerror(errno));
        }
        if (got == 0)
            return Error::at(path, what, "the file ended early (was it truncated while open?)");
        out += got;
        size -= static_cast<uint64_t>(got);
        offset += static_cast<uint64_t>(got);
    }
    return common::Ok{};
}

} // namespace

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path)
{
    SafetensorsFile file;
    file.m_path = path;
    file.m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file.m_fd < 0)
        return Error::at(path, "", std::string("cannot open: ") + std::strerror(errno));
    struct stat info { };
    if (::fstat(file.m_fd, &info) != 0)
        return Error::at(path, "", std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(info.st_mode))
        return Error::at(path, "", "not a regular file");
    file.m_fileBytes = static_cast<uint64_t>(info.st_size);

    std::string prefix(8, '\0');
    if (file.m_fileBytes >= 8) {
        if (auto status = preadAll(file.m_fd, reinterpret_cast<std::byte*>(prefix.data()), 8, 0,
                path, "header length");
            !status)
            return status.error();
    }
    const Result<uint64_t> headerBytes = parseHeaderLength(prefix, file.m_fileBytes, path);
    if (!headerBytes)
        return headerBytes.error();

    std::string headerText(*headerBytes, '\0');
    if (auto status = preadAll(file.m_fd, reinterpret_cast<std::byte*>(headerText.data()),
            headerText.size(), 8, path, "header");
        !status)
        return status.error();
    Result<Header> header = parseHeader(headerText, file.m_fileBytes - 8 - *headerBytes, path);
    if (!header)
        return header.error();
    file.m_header = std::move(header).value();
    for (size_t i = 0; i < file.m_header.tensors.size(); ++i)
        file.m_byName.emplace(file.m_header.tensors[i].name, i);
    return file;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : m_path(std::move(other.m_path))
    , m_fd(std::exchange(other.m_fd, -1))
    , m_fileBytes(other.m_fileBytes)
    , m_header(std::move(other.m_header))
{
    // Rebuilt rather than moved: its keys view names owned by m_header.
    other.m_byName.clear();
    for (size_t i = 0; i < m_header.tensors.size(); ++i)
        m_byName.emplace(m_header.tensors[i].name, i);
}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept
{
    if (this != &other) {
        close();
        m_path = std::move(other.m_path);
        m_fd = std::exchange(other.m_fd, -1);
        m_fileBytes = other.m_fileBytes;
        m_header = std::move(other.m_header);
        other.m_byName.clear();
        m_byName.clear();
        for (size_t i = 0; i < m_header.tensors.size(); ++i)
            m_byName.emplace(m_header.tensors[i].name, i);
    }
    return *this;
}

SafetensorsFile::~SafetensorsFile()
{
    close();
}

void SafetensorsFile::close()
{
    if (m_fd >= 0)
        ::close(m_fd);
    m_fd = -1;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const
{
    const auto it = m_byName.find(name);
    return it == m_byName.end() ? nullptr : &m_header.tensors[it->second];
}

Status SafetensorsFile::read(const TensorInfo& tensor, std::span<std::byte> out) const
{
    if (out.size() != tensor.byteCount())
        return Error::at(m_path, "tensor '" + tensor.name + "'",
            "destination holds " + std::to_string(out.size()) + " bytes, the tensor has "
                + std::to_string(tensor.byteCount()));
    return readRange(tensor, 0, out);
}

Status SafetensorsFile::readRange(
    const TensorInfo& tensor, uint64_t byteOffset, std::span<std::byte> out) const
{
    const std::string what = "tensor '" + tensor.name + "'";
    if (byteOffset > tensor.byteCount() || out.size() > tensor.byteCount() - byteOffset)
        return Error::at(m_path, what,
            "bytes [" + std::to_string(byteOffset) + ", " + std::to_string(byteOffset + out.size())
                + ") asked of a tensor of " + std::to_string(tensor.byteCount()));
    // The header was checked against the size at open; this re-check keeps a
    // TensorInfo from another file from reading past this one.
    if (tensor.dataEnd > m_fileBytes - m_header.dataOffset())
        return Error::at(m_path, what, "offsets lie outside this file's data region");
    return preadAll(m_fd, out.data(), out.size(),
        m_header.dataOffset() + tensor.dataBegin + byteOffset, m_path, what);
}

Result<std::vector<std::byte>> SafetensorsFile::readBytes(std::string_view name) const
{
    const TensorInfo* tensor = find(name);
    if (!tensor)
        return Error::at(m_path, "tensor '" + std::string(name) + "'", "not in this file");
    std::vector<std::byte> bytes(tensor->byteCount());
    if (auto status = read(*tensor, bytes); !status)
        return status.error();
    return bytes;
}

} // namespace tb::safetensors
