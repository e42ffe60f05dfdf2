#include "jinja/builtins.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <ctime>

namespace tb::jinja::detail {

namespace {

constexpr const char* kWhitespace = " \t\n\r\f\v";
constexpr std::int64_t kMaxRange = 100000;

std::string strip(const std::string& s, const std::string& chars, bool left, bool right)
{
    std::size_t begin = left ? s.find_first_not_of(chars) : 0;
    if (begin == std::string::npos)
        return {};
    std::size_t end = right ? s.find_last_not_of(chars) + 1 : s.size();
    return s.substr(begin, end - begin);
}

std::string stripChars(const Arguments& arguments)
{
    const Value* chars = arguments.get(0, "chars");
    return chars && chars->kind == Value::Kind::String ? chars->text : kWhitespace;
}

std::string mapText(std::string s, int (*f)(int))
{
    for (char& c : s)
        c = char(f(static_cast<unsigned char>(c)));
    return s;
}

std::string capitalize(const std::string& s)
{
    std::string out = mapText(
        s, +[](int c) { return std::tolower(c); });
    if (!out.empty())
        out[0] = char(std::toupper(static_cast<unsigned char>(out[0])));
    return out;
}

std::string title(const std::string& s)
{
    std::string out = s;
    bool start = true;
    for (char& c : out) {
        const auto u = static_cast<unsigned char>(c);
        c = char(start ? std::toupper(u) : std::tolower(u));
        start = !std::isalpha(u);
    }
    return out;
}

ValueList split(const std::string& s, const Value* separator, std::int64_t limit)
{
    ValueList parts;
    if (!separator || separator->kind == Value::Kind::None) {
        std::size_t i = s.find_first_not_of(kWhitespace);
        while (i != std::string::npos) {
            std::size_t end = s.find_first_of(kWhitespace, i);
            if (limit >= 0 && std::int64_t(parts.size()) == limit)
                end = std::string::npos;
            parts.push_back(Value::of(s.substr(i, end == std::string::npos ? end : end - i)));
            i = end == std::string::npos ? end : s.find_first_not_of(kWhitespace, end);
        }
        return parts;
    }
    const std::string& sep = expectText(*separator, "split's separator");
    if (sep.empty())
        fail("split: empty separator");
    std::size_t start = 0;
    while (true) {
        const std::size_t found = s.find(sep, start);
        if (found == std::string::npos || (limit >= 0 && std::int64_t(parts.size()) == limit)) {
            parts.push_back(Value::of(s.substr(start)));
            return parts;
        }
        parts.push_back(Value::of(s.substr(start, found - start)));
        start = found + sep.size();
    }
}

bool affixMatches(const std::string& s, const Value& affix, bool prefix)
{
    if (affix.kind == Value::Kind::List) {
        return std::any_of(affix.list->begin(), affix.list->end(),
            [&](const Value& one) { return affixMatches(s, one, prefix); });
    }
    const std::string& text = expectText(affix, prefix ? "startswith" : "endswith");
    return prefix ? s.starts_with(text) : s.ends_with(text);
}

std::string replace(
    std::string s, const std::string& from, const std::string& to, std::int64_t count)
{
    if (from.empty())
        return s;
    std::size_t at = 0;
    for (std::int64_t done = 0; count < 0 || done < count; ++done) {
        at = s.find(from, at);
        if (at == std::string::npos)
            break;
        s.replace(at, from.size(), to);
        at += to.size();
        if (s.size() > kMaxTextBytes)
            fail("replace makes a string longer than " + std::to_string(kMaxTextBytes) + " bytes");
    }
    return s;
}

Value stringMethod(const std::string& s, const std::string& name, const Arguments& arguments)
{
    const Value* first = arguments.get(0, "");
    if (name == "strip" || name == "lstrip" || name == "rstrip")
        return Value::of(strip(s, stripChars(arguments), name != "rstrip", name != "lstrip"));
    if (name == "split") {
        const Value* limit = arguments.get(1, "maxsplit");
        return Value::of(
            split(s, arguments.get(0, "sep"), limit ? expectInteger(*limit, "maxsplit") : -1));
    }
    if ((name == "startswith" || name == "endswith") && first)
        return Value::of(affixMatches(s, *first, name == "startswith"));
    if (name == "upper" || name == "lower")
        return Value::of(mapText(
            s, name == "upper" ? +[](int c) { return std::toupper(c); } : +[](int c) {
                return std::tolower(c);
            }));
    if (name == "title")
        return Value::of(title(s));
    if (name == "capitalize")
        return Value::of(capitalize(s));
    if (name == "replace" && arguments.positional.size() >= 2) {
        const Value* count = arguments.get(2, "count");
        return Value::of(replace(s, expectText(arguments.positional[0], "replace"),
            expectText(arguments.positional[1], "replace"),
            count ? expectInteger(*count, "count") : -1));
    }
    if (name == "find" && first) {
        const std::size_t at = s.find(expectText(*first, "find"));
        return Value::of(at == std::string::npos ? std::int64_t(-1) : std::int64_t(at));
    }
    if (name == "join" && first) {
        std::string out;
        const ValueList items = iterate(*first);
        for (std::size_t i = 0; i < items.size() && out.size() <= kMaxTextBytes; ++i)
            out += (i ? s : "") + expectText(items[i], "join's items");
        return Value::of(std::move(out));
    }
    if (name == "splitlines") {
        ValueList lines;
        const Value newline = Value::of(std::string("\n"));
        for (const Value& line : split(s, &newline, -1))
            lines.push_back(line);
        if (!lines.empty() && lines.back().text.empty())
            lines.pop_back();
        return Value::of(std::move(lines));
    }
    fail("str has no method '" + name + "' this engine runs, or its arguments are wrong");
}

Value dictMethod(const Value& dict, const std::string& name, const Arguments& arguments)
{
    if (name == "items" || name == "keys" || name == "values") {
        ValueList out;
        for (const auto& [key, value] : *dict.dict) {
            if (name == "items")
                out.push_back(Value::of(ValueList{Value::of(key), value}));
            else
                out.push_back(name == "keys" ? Value::of(key) : value);
        }
        return Value::of(std::move(out));
    }
    if (name == "get") {
        const Value* key = arguments.get(0, "key");
        const Value* found = key ? dict.find(expectText(*key, "get's key")) : nullptr;
        const Value* fallback = arguments.get(1, "default");
        return found ? *found : fallback ? *fallback : Value::none();
    }
    fail("dict has no method '" + name + "' this engine runs");
}

} // namespace

void fail(std::string what)
{
    throw RenderError{std::move(what)};
}

const Value* Arguments::get(std::size_t index, const char* name) const
{
    if (index < positional.size())
        return &positional[index];
    for (const auto& [key, value] : named) {
        if (key == name)
            return &value;
    }
    return nullptr;
}

const std::string& expectText(const Value& value, const char* what)
{
    if (value.kind != Value::Kind::String)
        fail(std::string(what) + " must be a string, got " + value.typeName());
    return value.text;
}

std::int64_t expectInteger(const Value& value, const char* what)
{
    if (value.kind != Value::Kind::Int && value.kind != Value::Kind::Bool)
        fail(std::string(what) + " must be an integer, got " + value.typeName());
    return value.kind == Value::Kind::Bool ? std::int64_t(value.boolean) : value.integer;
}

ValueList iterate(const Value& value)
{
    switch (value.kind) {
    case Value::Kind::Undefined:
        return {};
    case Value::Kind::List:
        return *value.list;
    case Value::Kind::Dict: {
        ValueList keys;
        for (const auto& entry : *value.dict)
            keys.push_back(Value::of(entry.first));
        return keys;
    }
    case Value::Kind::String: {
        ValueList characters;
        for (std::size_t i = 0; i < value.text.size();) {
            std::size_t length = 1;
            while (i + length < value.text.size()
                && (static_cast<unsigned char>(value.text[i + length]) & 0xc0) == 0x80)
                ++length;
            characters.push_back(Value::of(value.text.substr(i, length)));
            i += length;
        }
        return characters;
    }
    default:
        fail("'" + value.typeName() + "' object is not iterable");
    }
}

bool applyTest(const std::string& name, const Value& input, const Arguments& arguments)
{
    using K = Value::Kind;
    const Value* other = arguments.get(0, "");
    if (name == "defined")
        return !input.isUndefined();
    if (name == "undefined")
        return input.isUndefined();
    if (name == "none")
        return input.kind == K::None;
    if (name == "string")
        return input.kind == K::String;
    if (name == "number")
        return input.kind == K::Int || input.kind == K::Float;
    if (name == "integer")
        return input.kind == K::Int;
    if (name == "float")
        return input.kind == K::Float;
    if (name == "boolean")
        return input.kind == K::Bool;
    if (name == "true" || name == "false")
        return input.kind == K::Bool && input.boolean == (name == "true");
    if (name == "mapping")
        return input.kind == K::Dict;
    if (name == "iterable" || name == "sequence")
        return input.kind == K::List || input.kind == K::Dict || input.kind == K::String
            || (name == "iterable" && input.isUndefined());
    if (name == "callable")
        return false;
    if ((name == "equalto" || name == "eq" || name == "==" || name == "sameas") && other)
        return input == *other;
    if ((name == "ne" || name == "!=") && other)
        return !(input == *other);
    if (name == "odd" || name == "even")
        return (expectInteger(input, "odd/even") % 2 != 0) == (name == "odd");
    if (name == "divisibleby" && other) {
        const std::int64_t by = expectInteger(*other, "divisibleby");
        return by != 0 && expectInteger(input, "divisibleby") % by == 0;
    }
    if ((name == "gt" || name == "ge" || name == "lt" || name == "le") && other && input.isNumber()
        && other->isNumber()) {
        const double a = input.number(), b = other->number();
        return name == "gt" ? a > b : name == "ge" ? a >= b : name == "lt" ? a < b : a <= b;
    }
    if (name == "in" && other) {
        const ValueList items = iterate(*other);
        return std::find(items.begin(), items.end(), input) != items.end();
    }
    if (name == "lower" || name == "upper")
        return input.kind == K::String && input.text == stringMethod(input.text, name, {}).text;
    fail("test '" + name + "' is not one this engine runs");
}

Value callMethod(const Value& object, const std::string& name, const Arguments& arguments)
{
    if (object.kind == Value::Kind::String)
        return stringMethod(object.text, name, arguments);
    if (object.kind == Value::Kind::Dict && !object.isNamespace)
        return dictMethod(object, name, arguments);
    fail("'" + object.typeName() + "' has no method '" + name + "'");
}

bool isGlobalFunction(const std::string& name)
{
    return name == "raise_exception" || name == "namespace" || name == "dict" || name == "range"
        || name == "strftime_now";
}

Value callFunction(const std::string& name, const Arguments& arguments)
{
    if (name == "raise_exception") {
        const Value* message = arguments.get(0, "message");
        throw TemplateException{message ? message->str() : std::string("raise_exception")};
    }
    if (name == "namespace" || name == "dict") {
        Value space = Value::of(ValueDict{});
        space.isNamespace = name == "namespace";
        for (const Value& initial : arguments.positional)
            for (const auto& [key, value] :
                initial.kind == Value::Kind::Dict ? *initial.dict : ValueDict{})
                space.set(key, value);
        for (const auto& [key, value] : arguments.named)
            space.set(key, value);
        return space;
    }
    if (name == "range") {
        std::int64_t bounds[3] = {0, 0, 1};
        const std::size_t n = arguments.positional.size();
        if (n == 0 || n > 3)
            fail("range takes 1 to 3 integers");
        for (std::size_t i = 0; i < n; ++i)
            bounds[n == 1 ? 1 : i] = expectInteger(arguments.positional[i], "range");
        if (bounds[2] == 0)
            fail("range's step must not be zero");
        ValueList numbers;
        for (std::int64_t i = bounds[0]; bounds[2] > 0 ? i < bounds[1] : i > bounds[1];
             i += bounds[2]) {
            if (std::int64_t(numbers.size()) >= kMaxRange)
                fail("range is longer than " + std::to_string(kMaxRange));
            numbers.push_back(Value::of(i));
        }
        return Value::of(std::move(numbers));
    }
    if (name == "strftime_now") {
        const Value* format = arguments.get(0, "format");
        const std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        char buffer[256];
        const std::size_t n = std::strftime(buffer, sizeof buffer,
            format ? expectText(*format, "strftime_now's format").c_str() : "%Y-%m-%d", &local);
        return Value::of(std::string(buffer, n));
    }
    fail("'" + name + "' is not a function this engine runs");
}

} // namespace tb::jinja::detail
