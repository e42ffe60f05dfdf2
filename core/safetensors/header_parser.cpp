#include "safetensors/header_parser.h"

#include "common/json_document.h"
#include "common/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <set>

namespace tb::safetensors {

using common::Error;
using common::Result;
using nlohmann::json;

namespace {

// A real header nests three deep (root, tensor entry, shape array); anything
// much deeper is corrupt, and refusing it early bounds the parser's work.
constexpr int kMaxJsonDepth = 16;

// Names in errors are user data: clip them and show control bytes escaped so
// a corrupt header cannot flood or garble the terminal.
std::string shown(std::string_view text)
{
    constexpr size_t kMaxShown = 120;
    std::string out = "'" + common::escapeControl(text.substr(0, kMaxShown));
    if (text.size() > kMaxShown)
        out += "...";
    return out + "'";
}

std::string tensorField(const std::string& name, const char* field)
{
    return "tensor " + shown(name) + " field '" + field + "'";
}

// Thrown by the parser's callback at the first container nested deeper
// than kMaxJsonDepth, so the parser stops there instead of building it.
struct TooDeep { };

bool multiplyChecked(uint64_t a, uint64_t b, uint64_t& out)
{
    if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a)
        return false;
    out = a * b;
    return true;
}

Result<TensorInfo> parseEntry(
    const std::string& name, const json& entry, uint64_t dataBytes, const std::string& fileName)
{
    if (name.empty())
        return Error::at(fileName, "header", "a tensor has an empty name");
    if (!entry.is_object())
        return Error::at(fileName, "tensor " + shown(name),
            "got " + common::shownJson(entry)
                + ", expected an object with dtype, shape and data_offsets");
    for (const auto& [key, value] : entry.items()) {
        if (key != "dtype" && key != "shape" && key != "data_offsets")
            return Error::at(fileName, "tensor " + shown(name),
                "unknown field " + shown(key) + ", expected only dtype, shape and data_offsets");
    }

    TensorInfo info;
    info.name = name;

    const auto dtypeIt = entry.find("dtype");
    if (dtypeIt == entry.end() || !dtypeIt->is_string())
        return Error::at(fileName, tensorField(name, "dtype"),
            dtypeIt == entry.end() ? "missing" : "got " + common::shownJson(*dtypeIt),
            "expected one of " + supportedDTypeList());
    const std::string dtypeText = dtypeIt->get<std::string>();
    const std::optional<DType> dtype = parseDType(dtypeText);
    if (!dtype) {
        if (isKnownUnsupportedDType(dtypeText))
            return Error::at(fileName, tensorField(name, "dtype"),
                "sub-byte type " + shown(dtypeText) + " is not supported");
        return Error::at(fileName, tensorField(name, "dtype"), "unknown dtype " + shown(dtypeText),
            "expected one of " + supportedDTypeList());
    }
    info.dtype = *dtype;

    const auto shapeIt = entry.find("shape");
    if (shapeIt == entry.end() || !shapeIt->is_array())
        return Error::at(fileName, tensorField(name, "shape"),
            shapeIt == entry.end() ? "missing" : "got " + common::shownJson(*shapeIt),
            "expected an array of non-negative integers");
    uint64_t elements = 1;
    for (const json& dim : *shapeIt) {
        if (!dim.is_number_unsigned())
            return Error::at(fileName, tensorField(name, "shape"),
                "got " + common::shownJson(*shapeIt)
                    + ", expected an array of non-negative integers");
        const uint64_t size = dim.get<uint64_t>();
        if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
            || !multiplyChecked(elements, size, elements))
            return Error::at(fileName, tensorField(name, "shape"),
                "got " + common::shownJson(*shapeIt) + ", its element count overflows");
        info.shape.push_back(static_cast<int64_t>(size));
    }

    const auto offsetsIt = entry.find("data_offsets");
    if (offsetsIt == entry.end() || !offsetsIt->is_array() || offsetsIt->size() != 2
        || !(*offsetsIt)[0].is_number_unsigned() || !(*offsetsIt)[1].is_number_unsigned())
        return Error::at(fileName, tensorField(name, "data_offsets"),
            offsetsIt == entry.end() ? "missing" : "got " + common::shownJson(*offsetsIt),
            "expected [begin, end], two non-negative integers");
    info.dataBegin = (*offsetsIt)[0].get<uint64_t>();
    info.dataEnd = (*offsetsIt)[1].get<uint64_t>();
    if (info.dataBegin > info.dataEnd)
        return Error::at(fileName, tensorField(name, "data_offsets"),
            "got " + common::shownJson(*offsetsIt) + ", begin is after end");
    if (info.dataEnd > dataBytes)
        return Error::at(fileName, tensorField(name, "data_offsets"),
            "got " + common::shownJson(*offsetsIt) + ", but the data region has only "
                + std::to_string(dataBytes) + " bytes");

    uint64_t expectedBytes = 0;
    if (!multiplyChecked(elements, static_cast<uint64_t>(dtypeBytes(info.dtype)), expectedBytes)
        || expectedBytes != info.byteCount())
        return Error::at(fileName, tensorField(name, "data_offsets"),
            "spans " + std::to_string(info.byteCount()) + " bytes, but shape "
                + common::shownJson(*shapeIt) + " of " + dtypeText + " needs "
                + (expectedBytes == 0 && elements != 0 ? std::string("too many")
                                                       : std::to_string(expectedBytes)));
    return info;
}

Result<std::map<std::string, std::string>> parseMetadata(
    const json& value, const std::string& fileName)
{
    if (!value.is_object())
        return Error::at(fileName, "__metadata__",
            "got " + common::shownJson(value) + ", expected an object of strings");
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : value.items()) {
        if (!item.is_string())
            return Error::at(fileName, "__metadata__ key " + shown(key),
                "got " + common::shownJson(item) + ", expected a string");
        metadata.emplace(key, item.get<std::string>());
    }
    return metadata;
}

// Data must be covered exactly, in order: no overlap (two tensors sharing
// bytes) and no hole (bytes no tensor owns), as the format requires.
common::Status checkLayout(
    std::vector<TensorInfo>& tensors, uint64_t dataBytes, const std::string& fileName)
{
    std::stable_sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return a.dataBegin != b.dataBegin ? a.dataBegin < b.dataBegin : a.dataEnd < b.dataEnd;
    });
    uint64_t covered = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo& tensor : tensors) {
        if (tensor.dataBegin < covered)
            return Error::at(fileName, tensorField(tensor.name, "data_offsets"),
                "bytes [" + std::to_string(tensor.dataBegin) + ", " + std::to_string(tensor.dataEnd)
                    + ") overlap tensor " + shown(previous ? previous->name : std::string()));
        if (tensor.dataBegin > covered)
            return Error::at(fileName, tensorField(tensor.name, "data_offsets"),
                "begins at " + std::to_string(tensor.dataBegin) + ", leaving bytes ["
                    + std::to_string(covered) + ", " + std::to_string(tensor.dataBegin)
                    + ") owned by no tensor");
        covered = tensor.dataEnd;
        previous = &tensor;
    }
    if (covered != dataBytes)
        return Error::at(fileName, "data region",
            "tensors cover " + std::to_string(covered) + " bytes but the data region has "
                + std::to_string(dataBytes) + " (trailing bytes owned by no tensor)");
    return common::Ok{};
}

} // namespace

uint64_t TensorInfo::elementCount() const
{
    uint64_t count = 1;
    for (const int64_t dim : shape)
        count *= static_cast<uint64_t>(dim);
    return count;
}

Result<uint64_t> parseHeaderLength(
    std::string_view firstEightBytes, uint64_t fileBytes, const std::string& fileName)
{
    if (firstEightBytes.size() < 8 || fileBytes < 8)
        return Error::at(fileName, "header length",
            "the file has " + std::to_string(fileBytes)
                + " bytes, fewer than the 8-byte header length");
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length =
            (length << 8) | static_cast<unsigned char>(firstEightBytes[static_cast<size_t>(i)]);
    if (length < 2)
        return Error::at(fileName, "header length",
            "got " + std::to_string(length) + ", too short for a JSON object");
    if (length > kMaxHeaderBytes)
        return Error::at(fileName, "header length",
            "got " + std::to_string(length) + " bytes, more than the limit of "
                + std::to_string(kMaxHeaderBytes),
            "the file is corrupt or not a safetensors file");
    if (length > fileBytes - 8)
        return Error::at(fileName, "header length",
            "got " + std::to_string(length) + " bytes, but only " + std::to_string(fileBytes - 8)
                + " follow it",
            "the file is truncated or not a safetensors file");
    return length;
}

Result<Header> parseHeader(std::string_view text, uint64_t dataBytes, const std::string& fileName)
{
    if (text.empty() || text.front() != '{')
        return Error::at(fileName, "header", "does not start with '{'",
            "the file is corrupt or not a safetensors file");
    // nlohmann keeps the last of duplicate keys silently; a header with two
    // entries of one name is ambiguous, so catch them while parsing.
    std::vector<std::set<std::string>> keysByDepth;
    std::string duplicateKey;
    const json::parser_callback_t onEvent = [&](int depth, json::parse_event_t event,
                                                json& parsed) {
        const bool opens =
            event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
        if (opens && depth >= kMaxJsonDepth) // depth counts the containers around it
            throw TooDeep{};
        if (event == json::parse_event_t::object_start) {
            keysByDepth.emplace_back();
        } else if (event == json::parse_event_t::object_end) {
            if (!keysByDepth.empty())
                keysByDepth.pop_back();
        } else if (event == json::parse_event_t::key && !keysByDepth.empty()) {
            const std::string& key = parsed.get_ref<const std::string&>();
            if (!keysByDepth.back().insert(key).second && duplicateKey.empty())
                duplicateKey = key;
        }
        return true;
    };
    json root;
    try {
        root = json::parse(text.begin(), text.end(), onEvent);
    } catch (const TooDeep&) {
        return Error::at(fileName, "header",
            "JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    } catch (const json::exception& e) {
        return Error::at(fileName, "header", std::string("invalid JSON: ") + e.what());
    }
    if (!duplicateKey.empty())
        return Error::at(fileName, "header", "key " + shown(duplicateKey) + " appears twice");
    if (!root.is_object())
        return Error::at(
            fileName, "header", "got " + common::shownJson(root) + ", expected a JSON object");

    Header header;
    header.headerBytes = text.size();
    for (const auto& [key, value] : root.items()) {
        if (key == "__metadata__") {
            auto metadata = parseMetadata(value, fileName);
            if (!metadata)
                return metadata.error();
            header.metadata = std::move(metadata).value();
            continue;
        }
        auto entry = parseEntry(key, value, dataBytes, fileName);
        if (!entry)
            return entry.error();
        header.tensors.push_back(std::move(entry).value());
    }
    if (auto layout = checkLayout(header.tensors, dataBytes, fileName); !layout)
        return layout.error();
    return header;
}

} // namespace tb::safetensors
