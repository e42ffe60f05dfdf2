#include "safetensors/tensor_store.h"

#include "common/atomic_file.h"
#include "common/json_document.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

namespace tb::safetensors {

using common::Error;
using common::Result;
using common::Status;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// A shard name from an index is joined to the index's folder: it must stay
// inside it.
bool isPlainFileName(const std::string& name)
{
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos
        && name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

Result<std::map<std::string, std::string>> readWeightMap(const std::string& indexPath)
{
    const Result<std::string> text = common::readFile(indexPath);
    if (!text)
        return text.error();
    json root;
    try {
        root = common::parseJsonDocument(*text);
    } catch (const json::exception& e) {
        return Error::at(indexPath, "", std::string("invalid JSON: ") + e.what());
    }
    if (!root.is_object())
        return Error::at(indexPath, "", "expected a JSON object");
    const auto weightMap = root.find("weight_map");
    if (weightMap == root.end() || !weightMap->is_object())
        return Error::at(indexPath, "field 'weight_map'",
            weightMap == root.end() ? "missing" : "expected an object",
            "an index maps each tensor name to its shard file");
    std::map<std::string, std::string> shardOf;
    for (const auto& [name, file] : weightMap->items()) {
        if (!file.is_string() || !isPlainFileName(file.get<std::string>()))
            return Error::at(indexPath, "weight_map entry '" + name + "'",
                "got " + common::shownJson(file) + ", expected a file name in the index's folder");
        shardOf.emplace(name, file.get<std::string>());
    }
    if (shardOf.empty())
        return Error::at(indexPath, "field 'weight_map'", "lists no tensors");
    return shardOf;
}

} // namespace

Status TensorStore::addFile(SafetensorsFile file)
{
    m_files.push_back(std::move(file));
    const size_t fileIndex = m_files.size() - 1;
    const std::vector<TensorInfo>& tensors = m_files.back().tensors();
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo& tensor = tensors[i];
        const auto [it, inserted] = m_index.emplace(tensor.name, Location{fileIndex, i});
        if (!inserted)
            return Error::at(m_files.back().path(), "tensor '" + tensor.name + "'",
                "also in " + m_files[it->second.file].path());
    }
    return common::Ok{};
}

Result<TensorStore> TensorStore::open(const std::string& path)
{
    std::error_code ec;
    std::string target = path;
    if (fs::is_directory(path, ec)) {
        const fs::path dir(path);
        if (fs::exists(dir / kIndexName, ec))
            target = (dir / kIndexName).string();
        else if (fs::exists(dir / kSingleName, ec))
            target = (dir / kSingleName).string();
        else
            return Error::at(path, "",
                std::string("holds neither ") + kSingleName + " nor " + kIndexName,
                "is this a Hugging Face model folder with safetensors weights?");
    }

    TensorStore store;
    if (target.ends_with(".json")) {
        auto shardOf = readWeightMap(target);
        if (!shardOf)
            return shardOf.error();
        std::set<std::string> shardNames;
        for (const auto& entry : *shardOf)
            shardNames.insert(entry.second);
        const fs::path dir = fs::path(target).parent_path();
        for (const std::string& shard : shardNames) {
            auto file = SafetensorsFile::open((dir / shard).string());
            if (!file)
                return file.error();
            if (auto status = store.addFile(std::move(file).value()); !status)
                return status.error();
        }
        for (const auto& [name, shard] : *shardOf) {
            const auto it = store.m_index.find(name);
            if (it == store.m_index.end()
                || fs::path(store.m_files[it->second.file].path()).filename() != shard)
                return Error::at(target, "weight_map entry '" + name + "'",
                    "names shard " + shard + ", which does not hold this tensor");
        }
        for (const auto& [name, location] : store.m_index) {
            if (!shardOf->contains(name))
                return Error::at(store.m_files[location.file].path(), "tensor '" + name + "'",
                    "is not listed in " + target);
        }
        return store;
    }

    auto file = SafetensorsFile::open(target);
    if (!file)
        return file.error();
    if (auto status = store.addFile(std::move(file).value()); !status)
        return status.error();
    return store;
}

common::Status TensorStore::rename(
    const std::function<std::optional<std::string>(std::string_view stored)>& rename)
{
    std::map<std::string, Location, std::less<>> renamed;
    std::map<std::string, std::string, std::less<>> storedAs;
    for (const auto& [name, location] : m_index) {
        std::optional<std::string> as = rename(name);
        if (!as) {
            ++m_leftOut;
            continue;
        }
        if (const auto taken = storedAs.find(*as); taken != storedAs.end())
            return common::Error::at(m_files[location.file].path(), "tensor '" + name + "'",
                "is read as '" + *as + "', as is tensor '" + taken->second + "'",
                "a checkpoint holds each weight once");
        storedAs.emplace(*as, name);
        renamed.emplace(std::move(*as), location);
    }
    m_index = std::move(renamed);
    return common::Ok{};
}

std::vector<std::string> TensorStore::names() const
{
    std::vector<std::string> names;
    names.reserve(m_index.size());
    for (const auto& entry : m_index)
        names.push_back(entry.first);
    return names;
}

const TensorInfo* TensorStore::find(std::string_view name) const
{
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_files[it->second.file].tensors()[it->second.tensor];
}

std::string TensorStore::fileOf(std::string_view name) const
{
    const auto it = m_index.find(name);
    return it == m_index.end() ? std::string() : m_files[it->second.file].path();
}

Status TensorStore::read(std::string_view name, std::span<std::byte> out) const
{
    const TensorInfo* info = find(name);
    if (info && out.size() != info->byteCount())
        return Error::at(fileOf(name), "tensor '" + std::string(name) + "'",
            "destination holds " + std::to_string(out.size()) + " bytes, the tensor has "
                + std::to_string(info->byteCount()));
    return readRange(name, 0, out);
}

Status TensorStore::readRange(
    std::string_view name, uint64_t byteOffset, std::span<std::byte> out) const
{
    const auto it = m_index.find(name);
    if (it == m_index.end())
        return Error::at(m_files.empty() ? std::string() : m_files.front().path(),
            "tensor '" + std::string(name) + "'", "not in this model's weights");
    const SafetensorsFile& file = m_files[it->second.file];
    Status status = file.readRange(file.tensors()[it->second.tensor], byteOffset, out);
    if (status)
        m_bytesRead += out.size();
    return status;
}

} // namespace tb::safetensors
