#pragma once

#include "jinja/value.h"

#include <string>
#include <utility>
#include <vector>

// The filters, tests, methods and functions a chat template may call: those
// of Jinja and Python that the published chat templates use, and
// transformers' additions (raise_exception, strftime_now, its tojson).
namespace tb::jinja::detail {

// The template asked to stop (raise_exception): its own words.
struct TemplateException {
    std::string message;
};

// Stops the rendering with `what` (the renderer adds the place).
[[noreturn]] void fail(std::string what);

struct Arguments {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> named;

    // The argument at `index`, or named `name`; nullptr when neither is given.
    const Value* get(std::size_t index, const char* name) const;
};

Value applyFilter(const std::string& name, const Value& input, const Arguments& arguments);
bool applyTest(const std::string& name, const Value& input, const Arguments& arguments);
Value callMethod(const Value& object, const std::string& name, const Arguments& arguments);
Value callFunction(const std::string& name, const Arguments& arguments);
// A global function callFunction runs (raise_exception, strftime_now, ...):
// such a name is defined, as in transformers' environment, where templates
// test `strftime_now is defined` before calling it.
bool isGlobalFunction(const std::string& name);

// A binary operator other than `and` and `or` (which short-circuit):
// + - * / // % ** ~ == != < > <= >= in, "not in".
Value applyOperator(const std::string& op, const Value& left, const Value& right);

// Python's str(x) for a value that must be text in an operation, or a
// RenderError naming the operation and the type.
const std::string& expectText(const Value& value, const char* what);
std::int64_t expectInteger(const Value& value, const char* what);

// Items of an iterable value as a for loop sees them: a list's items, a
// dict's keys, a string's characters; undefined is empty.
ValueList iterate(const Value& value);

} // namespace tb::jinja::detail
