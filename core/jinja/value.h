#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// The values a chat template computes with, as Python (which Jinja runs on)
// has them: lists and dicts are shared references, dicts keep their insertion
// order, and undefined is a value of its own (printing it writes nothing).
namespace tb::jinja {

// Bounds on what a template can build: values nest at most this deep (so
// printing, comparing and freeing them cannot exhaust the stack) and a
// string holds at most this many bytes.
inline constexpr int kMaxValueDepth = 100;
inline constexpr std::size_t kMaxTextBytes = std::size_t(16) << 20;
// The most text one list or dict may hold, all its strings together.
inline constexpr std::size_t kMaxValueBytes = std::size_t(64) << 20;

namespace detail {
// What went wrong while rendering, without the place (the renderer adds it).
struct RenderError {
    std::string what;
};
} // namespace detail

struct Value;
using ValueList = std::vector<Value>;
using ValueDict = std::vector<std::pair<std::string, Value>>;

struct Value {
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict };

    Kind kind = Kind::Undefined;
    bool boolean = false;
    std::int64_t integer = 0;
    double real = 0;
    std::string text;
    std::shared_ptr<ValueList> list;
    std::shared_ptr<ValueDict> dict;
    bool isNamespace = false; // a dict whose attributes `set ns.x = ...` may change
    int depth = 0; // 0 for a scalar, else 1 + its deepest item's
    std::size_t bytes = 0; // the text it holds, its items' included

    static Value none();
    static Value of(bool v);
    static Value of(std::int64_t v);
    static Value of(double v);
    // Containers refuse a namespace as an item (so no value can hold itself)
    // and nesting beyond kMaxValueDepth; strings refuse kMaxTextBytes and
    // more: each with a detail::RenderError.
    static Value of(std::string v);
    static Value of(ValueList v);
    static Value of(ValueDict v);
    static Value fromJson(const nlohmann::ordered_json& json);

    bool isUndefined() const { return kind == Kind::Undefined; }
    bool isNumber() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
    double number() const;
    bool truthy() const;

    // The dict entry `key`, or nullptr.
    const Value* find(const std::string& key) const;
    Value* find(const std::string& key);
    void set(const std::string& key, Value value);

    // What Python's str() writes, and repr() for items inside containers.
    std::string str() const;
    std::string repr() const;
    // json.dumps(value, ensure_ascii=False, indent=indent), as transformers'
    // tojson filter writes it; indent < 0: on one line.
    std::string toJson(int indent = -1) const;
    // Python's type name, for messages ("str", "list", "undefined").
    std::string typeName() const;
};

// Python's ==.
bool operator==(const Value& a, const Value& b);

} // namespace tb::jinja
