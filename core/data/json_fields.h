#pragma once

// Reading the fields of one JSON record (json_records.cpp, chat_messages.cpp):
// a value found by name or dotted path, and its type named in messages.
#include "common/error.h"

#include <nlohmann/json.hpp>

#include <string>

namespace tb::data::detail {

// Records keep their keys in the file's order: a message's fields and a
// record's tools reach the model's chat template as Python's dicts would.
using json = nlohmann::ordered_json;

// The member `name` of `object`, else a dotted path into nested objects and
// arrays ("instances.0.output"); null when absent.
const json* lookup(const json& object, const std::string& name);

// "null", "string", "array", ... for messages.
std::string typeName(const json& value);

// A string field: absent or null is allowed when `required` is false.
common::Status readText(
    const json& object, const std::string& name, bool required, std::string& out);

} // namespace tb::data::detail
