#include "jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tb::jinja {

Value Value::none()
{
    Value v;
    v.kind = Kind::None;
    return v;
}

Value Value::of(bool b)
{
    Value v;
    v.kind = Kind::Bool;
    v.boolean = b;
    return v;
}

Value Value::of(std::int64_t i)
{
    Value v;
    v.kind = Kind::Int;
    v.integer = i;
    return v;
}

Value Value::of(double d)
{
    Value v;
    v.kind = Kind::Float;
    v.real = d;
    return v;
}

namespace {

// A container's depth and bytes with `item` (and its key) added, or a
// RenderError.
void include(Value& container, const Value& item, std::size_t keyBytes = 0)
{
    if (item.isNamespace)
        throw detail::RenderError{"a namespace cannot be kept in a list or dict"};
    container.depth = std::max(container.depth, item.depth + 1);
    if (container.depth > kMaxValueDepth)
        throw detail::RenderError{
            "values nest deeper than " + std::to_string(kMaxValueDepth) + " levels"};
    container.bytes += item.bytes + keyBytes;
    if (container.bytes > kMaxValueBytes)
        throw detail::RenderError{
            "a list or dict holds more than " + std::to_string(kMaxValueBytes) + " bytes of text"};
}

} // namespace

Value Value::of(std::string s)
{
    if (s.size() > kMaxTextBytes)
        throw detail::RenderError{"a string passes " + std::to_string(kMaxTextBytes) + " bytes"};
    Value v;
    v.kind = Kind::String;
    v.bytes = s.size();
    v.text = std::move(s);
    return v;
}

Value Value::of(ValueList l)
{
    Value v;
    v.kind = Kind::List;
    v.depth = 1;
    for (const Value& item : l)
        include(v, item);
    v.list = std::make_shared<ValueList>(std::move(l));
    return v;
}

Value Value::of(ValueDict d)
{
    Value v;
    v.kind = Kind::Dict;
    v.depth = 1;
    for (const auto& entry : d)
        include(v, entry.second, entry.first.size());
    v.dict = std::make_shared<ValueDict>(std::move(d));
    return v;
}

Value Value::fromJson(const nlohmann::ordered_json& json)
{
    switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
        return none();
    case nlohmann::ordered_json::value_t::boolean:
        return of(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned:
        return of(json.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_float:
        return of(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
        return of(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
        ValueList items;
        for (const auto& item : json)
            items.push_back(fromJson(item));
        return of(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
        ValueDict entries;
        for (const auto& [key, item] : json.items())
            entries.emplace_back(key, fromJson(item));
        return of(std::move(entries));
    }
    default:
        return Value{};
    }
}

double Value::number() const
{
    return kind == Kind::Float ? real : kind == Kind::Bool ? double(boolean) : double(integer);
}

bool Value::truthy() const
{
    switch (kind) {
    case Kind::Undefined:
    case Kind::None:
        return false;
    case Kind::Bool:
        return boolean;
    case Kind::Int:
        return integer != 0;
    case Kind::Float:
        return real != 0;
    case Kind::String:
        return !text.empty();
    case Kind::List:
        return !list->empty();
    case Kind::Dict:
        return !dict->empty();
    }
    return false;
}

const Value* Value::find(const std::string& key) const
{
    if (kind != Kind::Dict)
        return nullptr;
    for (const auto& [name, value] : *dict) {
        if (name == key)
            return &value;
    }
    return nullptr;
}

Value* Value::find(const std::string& key)
{
    return const_cast<Value*>(std::as_const(*this).find(key));
}

void Value::set(const std::string& key, Value value)
{
    include(*this, value, key.size());
    if (Value* existing = find(key))
        *existing = std::move(value);
    else
        dict->emplace_back(key, std::move(value));
}

namespace {

// Python's repr(float): the shortest digits that read back, in positional
// notation for exponents -4 to 15, else scientific ("1e-05", "1e+16").
std::string floatRepr(double d)
{
    if (std::isnan(d))
        return "nan";
    if (std::isinf(d))
        return d < 0 ? "-inf" : "inf";
    char buffer[64];
    const auto end =
        std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::scientific);
    const std::string sci(buffer, end.ptr);
    const std::size_t e = sci.find('e');
    const int exponent = std::stoi(sci.substr(e + 1));
    std::string digits;
    for (char c : sci.substr(0, e))
        if (c >= '0' && c <= '9')
            digits += c;
    const std::string sign = d < 0 ? "-" : "";
    if (exponent < -4 || exponent >= 16) {
        std::string mantissa = digits.substr(0, 1);
        if (digits.size() > 1)
            mantissa += "." + digits.substr(1);
        char exp[16];
        std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return sign + mantissa + exp;
    }
    if (exponent < 0)
        return sign + "0." + std::string(std::size_t(-exponent - 1), '0') + digits;
    const std::size_t point = std::size_t(exponent) + 1;
    if (digits.size() <= point)
        return sign + digits + std::string(point - digits.size(), '0') + ".0";
    return sign + digits.substr(0, point) + "." + digits.substr(point);
}

std::string stringRepr(const std::string& s)
{
    const bool doubleQuotes = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char quote = doubleQuotes ? '"' : '\'';
    std::string out(1, quote);
    for (unsigned char c : s) {
        if (c == '\\' || c == static_cast<unsigned char>(quote))
            out += '\\', out += char(c);
        else if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else if (c == '\t')
            out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else
            out += char(c);
    }
    return out + quote;
}

// JSON's string escapes as Python's json module writes them with
// ensure_ascii=False: quotes, backslashes and control characters only.
std::string jsonString(const std::string& s)
{
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        default:
            if (c < 0x20) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "\\u%04x", c);
                out += hex;
            } else
                out += char(c);
        }
    }
    return out + "\"";
}

// Printing a value may not write more than a string may hold (indentation
// and separators make the text longer than the value's own bytes).
void checkLength(const std::string& text)
{
    if (text.size() > kMaxTextBytes)
        throw detail::RenderError{
            "printing a value passes " + std::to_string(kMaxTextBytes) + " bytes"};
}

void appendJson(const Value& v, int indent, int depth, std::string& out)
{
    const bool pretty = indent >= 0;
    const auto newline = [&](int level) {
        if (pretty)
            out += "\n" + std::string(std::size_t(indent * level), ' ');
    };
    const std::string separator = pretty ? "," : ", ";
    switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
        out += "null";
        return;
    case Value::Kind::Bool:
        out += v.boolean ? "true" : "false";
        return;
    case Value::Kind::Int:
        out += std::to_string(v.integer);
        return;
    case Value::Kind::Float:
        out += std::isnan(v.real) ? "NaN"
            : std::isinf(v.real)  ? (v.real < 0 ? "-Infinity" : "Infinity")
                                  : floatRepr(v.real);
        return;
    case Value::Kind::String:
        out += jsonString(v.text);
        return;
    case Value::Kind::List:
        if (v.list->empty()) {
            out += "[]";
            return;
        }
        out += "[";
        for (std::size_t i = 0; i < v.list->size(); ++i) {
            checkLength(out);
            out += i ? separator : "";
            newline(depth + 1);
            appendJson((*v.list)[i], indent, depth + 1, out);
        }
        newline(depth);
        out += "]";
        return;
    case Value::Kind::Dict:
        if (v.dict->empty()) {
            out += "{}";
            return;
        }
        out += "{";
        for (std::size_t i = 0; i < v.dict->size(); ++i) {
            checkLength(out);
            out += i ? separator : "";
            newline(depth + 1);
            out += jsonString((*v.dict)[i].first) + ": ";
            appendJson((*v.dict)[i].second, indent, depth + 1, out);
        }
        newline(depth);
        out += "}";
        return;
    }
}

} // namespace

std::string Value::str() const
{
    switch (kind) {
    case Kind::Undefined:
        return "";
    case Kind::String:
        return text;
    default:
        return repr();
    }
}

std::string Value::repr() const
{
    switch (kind) {
    case Kind::Undefined:
        return "";
    case Kind::None:
        return "None";
    case Kind::Bool:
        return boolean ? "True" : "False";
    case Kind::Int:
        return std::to_string(integer);
    case Kind::Float:
        return floatRepr(real);
    case Kind::String:
        return stringRepr(text);
    case Kind::List: {
        std::string out = "[";
        for (std::size_t i = 0; i < list->size(); ++i) {
            checkLength(out);
            out += (i ? ", " : "") + (*list)[i].repr();
        }
        return out + "]";
    }
    case Kind::Dict: {
        std::string out = isNamespace ? "<Namespace {" : "{";
        for (std::size_t i = 0; i < dict->size(); ++i) {
            checkLength(out);
            out += (i ? ", " : "") + stringRepr((*dict)[i].first) + ": " + (*dict)[i].second.repr();
        }
        return out + (isNamespace ? "}>" : "}");
    }
    }
    return {};
}

std::string Value::toJson(int indent) const
{
    std::string out;
    appendJson(*this, indent, 0, out);
    return out;
}

std::string Value::typeName() const
{
    switch (kind) {
    case Kind::Undefined:
        return "undefined";
    case Kind::None:
        return "NoneType";
    case Kind::Bool:
        return "bool";
    case Kind::Int:
        return "int";
    case Kind::Float:
        return "float";
    case Kind::String:
        return "str";
    case Kind::List:
        return "list";
    case Kind::Dict:
        return isNamespace ? "Namespace" : "dict";
    }
    return {};
}

bool operator==(const Value& a, const Value& b)
{
    if (a.kind == Value::Kind::Int && b.kind == Value::Kind::Int)
        return a.integer == b.integer;
    if (a.isNumber() && b.isNumber())
        return a.number() == b.number();
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
        return true;
    case Value::Kind::String:
        return a.text == b.text;
    case Value::Kind::List:
        return *a.list == *b.list;
    case Value::Kind::Dict:
        return *a.dict == *b.dict;
    default:
        return false;
    }
}

} // namespace tb::jinja
