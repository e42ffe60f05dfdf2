#include "data/json_fields.h"

#include "common/text.h"

#include <charconv>

namespace tb::data::detail {

const json* lookup(const json& object, const std::string& name)
{
    if (const auto it = object.find(name); it != object.end())
        return &*it;
    // A dotted path into nested data, e.g. self-instruct's instances.0.output.
    if (name.find('.') == std::string::npos)
        return nullptr;
    const json* node = &object;
    for (const std::string& part : common::split(name, '.')) {
        if (node->is_object()) {
            const auto it = node->find(part);
            if (it == node->end())
                return nullptr;
            node = &*it;
        } else if (node->is_array()) {
            std::size_t index = 0;
            const auto [end, error] =
                std::from_chars(part.data(), part.data() + part.size(), index);
            if (error != std::errc() || end != part.data() + part.size() || index >= node->size())
                return nullptr;
            node = &(*node)[index];
        } else {
            return nullptr;
        }
    }
    return node;
}

std::string typeName(const json& value)
{
    return value.is_null() ? "null" : value.type_name();
}

common::Status readText(
    const json& object, const std::string& name, bool required, std::string& out)
{
    const json* value = lookup(object, name);
    if (!value || value->is_null()) {
        if (required)
            return common::Error{"'" + name + "' is missing", {}};
        return common::Ok{};
    }
    if (!value->is_string())
        return common::Error{"'" + name + "' is " + typeName(*value) + ", expected a string", {}};
    out = value->get<std::string>();
    return common::Ok{};
}

} // namespace tb::data::detail
