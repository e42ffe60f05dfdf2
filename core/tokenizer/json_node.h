#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::tokenizer::detail {

// Thrown inside the loader only and turned into a common::Error at the API
// edge: `path` is the JSON field ("model.merges[12]"), `message` says what was
// found and what was expected.
struct LoadError {
    std::string path;
    std::string message;
};

// A JSON value together with its path in the document, so every check can
// name the field it rejects. Checks throw LoadError.
class JsonNode {
public:
    JsonNode(const nlohmann::json& value, std::string path);

    const nlohmann::json& json() const { return *m_value; }
    const std::string& path() const { return m_path; }

    bool isNull() const { return m_value->is_null(); }
    bool isString() const { return m_value->is_string(); }
    bool isArray() const { return m_value->is_array(); }
    bool isObject() const { return m_value->is_object(); }

    // Required member of an object (absent or null is an error).
    JsonNode member(std::string_view key, std::string_view expected) const;
    // Optional member: nullopt when absent or null.
    std::optional<JsonNode> optionalMember(std::string_view key) const;
    bool hasMember(std::string_view key) const;

    std::size_t arraySize(std::string_view expected) const; // checks it is an array
    JsonNode element(std::size_t index) const;

    std::string string(std::string_view expected = "a string") const;
    char32_t character() const; // a string of exactly one code point
    bool boolean() const;
    long long integer(long long min, long long max) const;
    double number() const;

    // Optional scalars with a default when absent or null.
    bool boolean(std::string_view key, bool fallback) const;
    std::string string(std::string_view key, std::string_view fallback) const;
    std::optional<std::string> optionalString(std::string_view key) const;

    // The "type" member of a component object, checked to be a string.
    std::string typeName() const;

    [[noreturn]] void fail(std::string_view expected) const;
    [[noreturn]] void failWith(std::string_view message) const;

private:
    const nlohmann::json* m_value;
    std::string m_path;
};

// A "Sequence" component's parts: each element of its list `key` read by
// `parse` (a normalizer's, pre-tokenizer's or decoder's own parser).
template <typename Part, typename Parse>
std::vector<std::unique_ptr<Part>> sequenceParts(
    const JsonNode& node, std::string_view key, std::string_view expected, Parse parse)
{
    const JsonNode list = node.member(key, expected);
    const std::size_t count = list.arraySize(expected);
    std::vector<std::unique_ptr<Part>> parts;
    for (std::size_t i = 0; i < count; ++i)
        parts.push_back(parse(list.element(i)));
    return parts;
}

// A short, single-line rendering of a JSON value for error messages.
std::string describe(const nlohmann::json& value);

} // namespace tb::tokenizer::detail
