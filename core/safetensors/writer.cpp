#include "safetensors/writer.h"

#include "common/atomic_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace tb::safetensors {

using common::Error;
using common::Result;
using common::Status;
using nlohmann::json;

namespace {

uint64_t byteCountOf(const TensorLayout& layout)
{
    uint64_t elements = 1;
    for (const int64_t dim : layout.shape)
        elements *= static_cast<uint64_t>(dim);
    return elements * static_cast<uint64_t>(dtypeBytes(layout.dtype));
}

Status checkLayouts(const std::string& path, const std::vector<TensorLayout>& layouts)
{
    std::set<std::string> seen;
    for (const TensorLayout& tensor : layouts) {
        const std::string where = "tensor '" + tensor.name + "'";
        if (tensor.name.empty() || tensor.name == "__metadata__")
            return Error::at(path, where, "is not a valid tensor name");
        if (!seen.insert(tensor.name).second)
            return Error::at(path, where, "given twice");
        uint64_t elements = 1;
        for (const int64_t dim : tensor.shape) {
            if (dim < 0)
                return Error::at(path, where, "has a negative dimension");
            const auto size = static_cast<uint64_t>(dim);
            if (size != 0 && elements > std::numeric_limits<uint64_t>::max() / size)
                return Error::at(path, where, "element count overflows");
            elements *= size;
        }
        if (elements > std::numeric_limits<uint64_t>::max() / 8)
            return Error::at(path, where, "byte count overflows");
    }
    return common::Ok{};
}

Status checkSize(const std::string& path, const TensorLayout& layout, size_t bytes)
{
    const uint64_t expected = byteCountOf(layout);
    if (bytes != expected)
        return Error::at(path, "tensor '" + layout.name + "'",
            "has " + std::to_string(bytes) + " bytes, its shape and "
                + std::string(dtypeName(layout.dtype)) + " need " + std::to_string(expected));
    return common::Ok{};
}

} // namespace

class SafetensorsStream::File : public common::AtomicFile {
public:
    using common::AtomicFile::AtomicFile;
};

SafetensorsStream::SafetensorsStream(
    std::string path, std::vector<TensorLayout> layouts, std::unique_ptr<File> file)
    : m_path(std::move(path))
    , m_layouts(std::move(layouts))
    , m_file(std::move(file))
{
}

SafetensorsStream::SafetensorsStream(SafetensorsStream&&) noexcept = default;
SafetensorsStream& SafetensorsStream::operator=(SafetensorsStream&&) noexcept = default;
SafetensorsStream::~SafetensorsStream() = default;

Result<SafetensorsStream> SafetensorsStream::open(const std::string& path,
    const std::vector<TensorLayout>& layouts, const std::map<std::string, std::string>& metadata)
{
    if (auto status = checkLayouts(path, layouts); !status)
        return status.error();
    json header = json::object();
    if (!metadata.empty())
        header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const TensorLayout& tensor : layouts) {
        const uint64_t end = offset + byteCountOf(tensor);
        header[tensor.name] = {{"dtype", std::string(dtypeName(tensor.dtype))},
            {"shape", tensor.shape}, {"data_offsets", {offset, end}}};
        offset = end;
    }
    std::string headerText = header.dump();
    headerText.append((8 - headerText.size() % 8) % 8, ' ');
    unsigned char length[8];
    for (int i = 0; i < 8; ++i)
        length[i] = static_cast<unsigned char>(static_cast<uint64_t>(headerText.size()) >> (8 * i));

    auto file = std::make_unique<File>(path);
    if (!file->isOpen())
        return Error::at(
            path, "", std::string("cannot create a temporary file: ") + std::strerror(errno));
    if (!file->write(length, sizeof length) || !file->write(headerText.data(), headerText.size()))
        return Error::at(path, "", std::string("cannot write: ") + std::strerror(errno));
    return SafetensorsStream(path, layouts, std::move(file));
}

Status SafetensorsStream::append(const std::string& name, std::span<const std::byte> bytes)
{
    if (m_next >= m_layouts.size() || m_layouts[m_next].name != name)
        return Error::at(m_path, "tensor '" + name + "'",
            m_next >= m_layouts.size() ? "appended after the last tensor"
                                       : "appended where '" + m_layouts[m_next].name + "' is next");
    if (auto status = checkSize(m_path, m_layouts[m_next], bytes.size()); !status)
        return status;
    if (!m_file->write(bytes.data(), bytes.size()))
        return Error::at(m_path, "", std::string("cannot write: ") + std::strerror(errno));
    ++m_next;
    return common::Ok{};
}

Status SafetensorsStream::commit()
{
    if (m_next != m_layouts.size())
        return Error::at(m_path, "",
            std::to_string(m_layouts.size() - m_next) + " tensors were never written, the first '"
                + m_layouts[m_next].name + "'");
    if (!m_file->commit())
        return Error::at(m_path, "", std::string("cannot write: ") + std::strerror(errno));
    return common::Ok{};
}

Status writeSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
    const std::map<std::string, std::string>& metadata)
{
    std::vector<const TensorToWrite*> order;
    for (const TensorToWrite& tensor : tensors)
        order.push_back(&tensor);
    std::stable_sort(
        order.begin(), order.end(), [](const TensorToWrite* a, const TensorToWrite* b) {
            const int sizeA = dtypeBytes(a->dtype);
            const int sizeB = dtypeBytes(b->dtype);
            return sizeA != sizeB ? sizeA > sizeB : a->name < b->name;
        });
    std::vector<TensorLayout> layouts;
    for (const TensorToWrite* tensor : order)
        layouts.push_back({tensor->name, tensor->dtype, tensor->shape});
    if (auto status = checkLayouts(path, layouts); !status)
        return status;
    for (size_t i = 0; i < order.size(); ++i) {
        if (auto status = checkSize(path, layouts[i], order[i]->bytes.size()); !status)
            return status;
    }
    auto opened = SafetensorsStream::open(path, layouts, metadata);
    if (!opened)
        return opened.error();
    SafetensorsStream& stream = opened.value();
    for (const TensorToWrite* tensor : order) {
        if (auto status = stream.append(tensor->name, tensor->bytes); !status)
            return status;
    }
    return stream.commit();
}

Status writeShardIndex(const std::string& path,
    const std::map<std::string, std::string>& shardOfTensor, uint64_t totalBytes)
{
    const json index = {{"metadata", {{"total_size", totalBytes}}}, {"weight_map", shardOfTensor}};
    return common::writeFileAtomic(path, index.dump(2) + "\n");
}

} // namespace tb::safetensors
