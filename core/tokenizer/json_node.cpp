#include "tokenizer/json_node.h"

#include "tokenizer/unicode.h"

#include <cmath>
#include <limits>

namespace tb::tokenizer::detail {

namespace {

bool isPlainKey(std::string_view key)
{
    if (key.empty())
        return false;
    for (char c : key) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok)
            return false;
    }
    return true;
}

std::string memberPath(const std::string& parent, std::string_view key)
{
    if (isPlainKey(key))
        return parent.empty() ? std::string(key) : parent + "." + std::string(key);
    return parent + "["
        + nlohmann::json(std::string(key))
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
        + "]";
}

} // namespace

std::string describe(const nlohmann::json& value)
{
    constexpr std::size_t kMaxChars = 60;
    std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() > kMaxChars) {
        // Cut on a UTF-8 boundary so the message stays valid text.
        std::size_t cut = kMaxChars;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
            --cut;
        text = text.substr(0, cut) + "...";
    }
    return text;
}

JsonNode::JsonNode(const nlohmann::json& value, std::string path)
    : m_value(&value)
    , m_path(std::move(path))
{
}

void JsonNode::fail(std::string_view expected) const
{
    throw LoadError{m_path, "got " + describe(*m_value) + ", expected " + std::string(expected)};
}

void JsonNode::failWith(std::string_view message) const
{
    throw LoadError{m_path, std::string(message)};
}

bool JsonNode::hasMember(std::string_view key) const
{
    if (!m_value->is_object())
        return false;
    const auto it = m_value->find(key);
    return it != m_value->end() && !it->is_null();
}

JsonNode JsonNode::member(std::string_view key, std::string_view expected) const
{
    if (!m_value->is_object())
        fail("an object with a field '" + std::string(key) + "'");
    const auto it = m_value->find(key);
    if (it == m_value->end() || it->is_null())
        throw LoadError{memberPath(m_path, key), "missing, expected " + std::string(expected)};
    return JsonNode(*it, memberPath(m_path, key));
}

std::optional<JsonNode> JsonNode::optionalMember(std::string_view key) const
{
    if (!m_value->is_object())
        fail("an object");
    const auto it = m_value->find(key);
    if (it == m_value->end() || it->is_null())
        return std::nullopt;
    return JsonNode(*it, memberPath(m_path, key));
}

std::size_t JsonNode::arraySize(std::string_view expected) const
{
    if (!m_value->is_array())
        fail(expected);
    return m_value->size();
}

JsonNode JsonNode::element(std::size_t index) const
{
    return JsonNode((*m_value)[index], m_path + "[" + std::to_string(index) + "]");
}

std::string JsonNode::string(std::string_view expected) const
{
    if (!m_value->is_string())
        fail(expected);
    return m_value->get<std::string>();
}

char32_t JsonNode::character() const
{
    const std::string text = string("exactly one character");
    std::size_t pos = 0;
    const char32_t cp = text.empty() ? 0 : nextCodePoint(text, pos);
    if (text.empty() || pos != text.size())
        fail("exactly one character");
    return cp;
}

bool JsonNode::boolean() const
{
    if (!m_value->is_boolean())
        fail("true or false");
    return m_value->get<bool>();
}

long long JsonNode::integer(long long min, long long max) const
{
    const std::string expected =
        "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    if (m_value->is_number_unsigned()) {
        const auto v = m_value->get<unsigned long long>();
        if (v > static_cast<unsigned long long>(max))
            fail(expected);
        return static_cast<long long>(v);
    }
    if (m_value->is_number_integer()) {
        const auto v = m_value->get<long long>();
        if (v < min || v > max)
            fail(expected);
        return v;
    }
    fail(expected);
}

double JsonNode::number() const
{
    if (!m_value->is_number())
        fail("a number");
    const double v = m_value->get<double>();
    if (!std::isfinite(v))
        fail("a finite number");
    return v;
}

bool JsonNode::boolean(std::string_view key, bool fallback) const
{
    const auto node = optionalMember(key);
    return node ? node->boolean() : fallback;
}

std::string JsonNode::string(std::string_view key, std::string_view fallback) const
{
    const auto node = optionalMember(key);
    return node ? node->string() : std::string(fallback);
}

std::optional<std::string> JsonNode::optionalString(std::string_view key) const
{
    const auto node = optionalMember(key);
    if (!node)
        return std::nullopt;
    return node->string();
}

std::string JsonNode::typeName() const
{
    return member("type", "the component's type name (a string)").string("a type name (a string)");
}

} // namespace tb::tokenizer::detail
