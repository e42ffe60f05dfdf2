#pragma once

// Internal to core/model: reading the fields of a Hugging Face config.json
// object with every problem collected, naming the file and the field.
#include "model/hf_architecture.h"
#include "model/hf_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb::model::detail {

using nlohmann::json;

// How a value is named in an error: "null", "\"text\"", "an object", 12.
inline std::string typeName(const json& value)
{
    switch (value.type()) {
    case json::value_t::null:
        return "null";
    case json::value_t::boolean:
        return value.get<bool>() ? "true" : "false";
    case json::value_t::string:
        return "\"" + value.get<std::string>() + "\"";
    case json::value_t::object:
        return "an object";
    case json::value_t::array:
        return "an array";
    default:
        return value.dump();
    }
}

// Reads the fields of one JSON object; every problem names the file and the
// field (with `prefix` for nested objects) and is collected, not returned.
struct Reader {
    const json& object;
    const std::string& origin;
    std::vector<std::string>& problems;
    std::string prefix;

    void problem(const std::string& field, const std::string& what)
    {
        problems.push_back(origin + ": field '" + prefix + field + "': " + what);
    }

    const json* find(const char* field) const
    {
        const auto it = object.find(field);
        return it == object.end() || it->is_null() ? nullptr : &*it;
    }
    bool has(const char* field) const { return find(field) != nullptr; }

    // A positive integer; absent or null gives nullopt (and a problem if required).
    std::optional<std::int64_t> integer(const char* field, bool required)
    {
        const json* value = find(field);
        if (!value) {
            if (required)
                problem(field, "missing, expected a positive integer");
            return std::nullopt;
        }
        const bool fits = value->is_number_integer()
            || (value->is_number_unsigned()
                && value->get<std::uint64_t>() <= std::uint64_t(INT64_MAX));
        if (!fits || value->get<std::int64_t>() <= 0) {
            problem(field, "got " + typeName(*value) + ", expected a positive integer");
            return std::nullopt;
        }
        return value->get<std::int64_t>();
    }

    std::optional<double> positiveNumber(const char* field)
    {
        const json* value = find(field);
        if (!value)
            return std::nullopt;
        if (!value->is_number() || !(value->get<double>() > 0)) {
            problem(field, "got " + typeName(*value) + ", expected a positive number");
            return std::nullopt;
        }
        return value->get<double>();
    }

    std::optional<bool> boolean(const char* field)
    {
        const json* value = find(field);
        if (!value)
            return std::nullopt;
        if (!value->is_boolean()) {
            problem(field, "got " + typeName(*value) + ", expected true or false");
            return std::nullopt;
        }
        return value->get<bool>();
    }

    std::optional<std::string> text(const char* field)
    {
        const json* value = find(field);
        if (!value)
            return std::nullopt;
        if (!value->is_string()) {
            problem(field, "got " + typeName(*value) + ", expected text");
            return std::nullopt;
        }
        return value->get<std::string>();
    }

    // A token id or a list of them.
    std::vector<std::int64_t> tokenIds(const char* field)
    {
        std::vector<std::int64_t> ids;
        const json* value = find(field);
        if (!value)
            return ids;
        const json list = value->is_array() ? *value : json::array({*value});
        for (const json& id : list) {
            if (!id.is_number_integer()) {
                problem(
                    field, "got " + typeName(*value) + ", expected a token id or a list of them");
                return {};
            }
            ids.push_back(id.get<std::int64_t>());
        }
        return ids;
    }

    std::vector<std::string> textList(const char* field)
    {
        std::vector<std::string> items;
        const json* value = find(field);
        if (!value)
            return items;
        for (const json& item : value->is_array() ? *value : json::array({nullptr})) {
            if (!item.is_string()) {
                problem(field, "got " + typeName(*value) + ", expected a list of names");
                return {};
            }
            items.push_back(item.get<std::string>());
        }
        return items;
    }
};

// rope_theta, rope_scaling or rope_parameters (and Gemma 3's per-layer-type
// form, rope_local_base_freq, Phi-4-mini's partial_rotary_factor inside
// rope_parameters) into `config` (hf_rope_config.cpp).
void readRope(Reader& reader, HfConfig& config, const HfArchitecture& arch);

// The experts of a mixture of experts (Mixtral, Qwen3-MoE), with the
// defaults of its configuration class; an expert count in a file of
// another model_type is a problem (hf_experts_config.cpp).
void readExperts(Reader& reader, HfConfig& config, const HfArchitecture& arch);

} // namespace tb::model::detail
