#include "jinja/builtins.h"

#include <algorithm>
#include <climits>
#include <cmath>

// Jinja's filters, as the published chat templates use them.
namespace tb::jinja::detail {

namespace {

std::int64_t codePoints(const std::string& s)
{
    return std::int64_t(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

Arguments shifted(const Arguments& arguments, std::size_t by)
{
    Arguments rest;
    rest.named = arguments.named;
    for (std::size_t i = by; i < arguments.positional.size(); ++i)
        rest.positional.push_back(arguments.positional[i]);
    return rest;
}

// select, reject, selectattr, rejectattr.
Value selectItems(const Value& input, const Arguments& arguments, bool keep, bool byAttribute)
{
    ValueList out;
    const std::size_t testAt = byAttribute ? 1 : 0;
    const Value* test = arguments.get(testAt, "");
    const Arguments testArguments = shifted(arguments, testAt + 1);
    for (const Value& item : iterate(input)) {
        Value subject = item;
        if (byAttribute) {
            const Value* attribute = arguments.get(0, "");
            const Value* found =
                attribute ? item.find(expectText(*attribute, "attribute")) : nullptr;
            subject = found ? *found : Value{};
        }
        const bool passes = test ? applyTest(expectText(*test, "test name"), subject, testArguments)
                                 : subject.truthy();
        if (passes == keep)
            out.push_back(item);
    }
    return Value::of(std::move(out));
}

Value mapItems(const Value& input, const Arguments& arguments)
{
    ValueList out;
    const Value* attribute = arguments.get(99, "attribute");
    const Value* filter = arguments.get(0, "");
    for (const Value& item : iterate(input)) {
        if (attribute) {
            const Value* found = item.find(expectText(*attribute, "attribute"));
            const Value* fallback = arguments.get(99, "default");
            out.push_back(found ? *found : fallback ? *fallback : Value{});
        } else if (filter) {
            out.push_back(
                applyFilter(expectText(*filter, "filter name"), item, shifted(arguments, 1)));
        } else {
            fail("map needs a filter name or attribute=");
        }
    }
    return Value::of(std::move(out));
}

std::string indent(const std::string& s, const Arguments& arguments)
{
    const Value* width = arguments.get(0, "width");
    const Value* first = arguments.get(1, "first");
    const std::int64_t columns = width ? expectInteger(*width, "indent width") : 4;
    if (columns < 0 || columns > 1000)
        fail("indent width " + std::to_string(columns) + " is outside 0 to 1000");
    const std::string pad(std::size_t(columns), ' ');
    std::string out = first && first->truthy() ? pad : "";
    for (std::size_t i = 0; i < s.size(); ++i) {
        out += s[i];
        if (s[i] == '\n' && i + 1 < s.size() && s[i + 1] != '\n')
            out += pad;
        if (out.size() > kMaxTextBytes)
            fail("indent makes a string longer than " + std::to_string(kMaxTextBytes) + " bytes");
    }
    return out;
}

// A double as an int, as Python's int() truncates it; an Error outside int64.
Value truncated(double d)
{
    if (!(std::fabs(d) < 9.2e18))
        fail("int() of " + Value::of(d).repr() + " is outside a 64-bit integer");
    return Value::of(std::int64_t(d));
}

Value numberFilter(const std::string& name, const Value& input, const Arguments& arguments)
{
    const Value* fallback = arguments.get(0, "default");
    if (input.kind == Value::Kind::Int)
        return name == "int" ? input : Value::of(input.number());
    if (input.isNumber())
        return name == "int" ? truncated(input.number()) : Value::of(input.number());
    if (input.kind == Value::Kind::String) {
        try {
            std::size_t used = 0;
            const double parsed = std::stod(input.text, &used);
            if (used == input.text.size())
                return name == "int" ? truncated(parsed) : Value::of(parsed);
        } catch (const std::exception&) {
        }
    }
    if (fallback)
        return *fallback;
    return name == "int" ? Value::of(std::int64_t(0)) : Value::of(0.0);
}

Value firstOrLast(const Value& input, bool first)
{
    const ValueList items = iterate(input);
    if (items.empty())
        return Value{};
    return first ? items.front() : items.back();
}

} // namespace

Value applyFilter(const std::string& name, const Value& input, const Arguments& arguments)
{
    if (name == "trim")
        return callMethod(Value::of(expectText(input, "trim's input")), "strip", arguments);
    if (name == "length" || name == "count") {
        if (input.kind == Value::Kind::String)
            return Value::of(codePoints(input.text));
        return Value::of(std::int64_t(iterate(input).size()));
    }
    if (name == "tojson") {
        const Value* width = arguments.get(0, "indent");
        return Value::of(
            input.toJson(width && width->kind == Value::Kind::Int ? int(width->integer) : -1));
    }
    if (name == "string")
        return Value::of(input.str());
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "title")
        return callMethod(Value::of(expectText(input, name.c_str())), name, arguments);
    if (name == "replace")
        return callMethod(Value::of(expectText(input, "replace's input")), name, arguments);
    if (name == "default" || name == "d") {
        const Value* fallback = arguments.get(0, "default_value");
        const Value* boolean = arguments.get(1, "boolean");
        const bool useFallback =
            input.isUndefined() || (boolean && boolean->truthy() && !input.truthy());
        return useFallback ? (fallback ? *fallback : Value::of(std::string())) : input;
    }
    if (name == "join") {
        const Value* separator = arguments.get(0, "d");
        Arguments joinArguments;
        ValueList texts;
        for (const Value& item : iterate(input))
            texts.push_back(Value::of(item.str()));
        joinArguments.positional.push_back(Value::of(std::move(texts)));
        return callMethod(Value::of(separator ? expectText(*separator, "join's separator") : ""),
            "join", joinArguments);
    }
    if (name == "first" || name == "last")
        return firstOrLast(input, name == "first");
    if (name == "list")
        return Value::of(iterate(input));
    if (name == "items") {
        if (input.kind != Value::Kind::Dict)
            fail("items needs a dict, got " + input.typeName());
        return callMethod(input, "items", {});
    }
    if (name == "select" || name == "reject")
        return selectItems(input, arguments, name == "select", false);
    if (name == "selectattr" || name == "rejectattr")
        return selectItems(input, arguments, name == "selectattr", true);
    if (name == "map")
        return mapItems(input, arguments);
    if (name == "reverse") {
        ValueList items = iterate(input);
        std::reverse(items.begin(), items.end());
        if (input.kind != Value::Kind::String)
            return Value::of(std::move(items));
        std::string out;
        for (const Value& c : items)
            out += c.text;
        return Value::of(std::move(out));
    }
    if (name == "int" || name == "float")
        return numberFilter(name, input, arguments);
    if (name == "abs" && input.kind == Value::Kind::Float)
        return Value::of(std::fabs(input.real));
    if (name == "abs" && input.isNumber()) {
        const std::int64_t n = expectInteger(input, "abs");
        if (n == INT64_MIN)
            fail("integer overflow in abs");
        return Value::of(n < 0 ? -n : n);
    }
    if (name == "indent")
        return Value::of(indent(expectText(input, "indent's input"), arguments));
    if (name == "safe")
        return input;
    fail("filter '" + name + "' is not one this engine runs");
}

} // namespace tb::jinja::detail
