#pragma once

#include <nlohmann/json.hpp>

#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

// JSON read from files and from other machines. No format Tunebench reads
// nests more than a few levels, and a value nested thousands deep (a
// 200 KB line of '[') overflows the stack in nlohmann's recursive dump and
// copy: such text is refused while it is parsed.
namespace tb::common {

inline constexpr int kMaxJsonDepth = 64;

// One of nlohmann's exceptions, so that every reader catching those (the
// registry and node facts readers do) reports it as bad JSON rather than
// letting it end the program (found by fuzz_registry_entry and
// fuzz_node_facts).
struct JsonTooDeep : nlohmann::json::exception {
    JsonTooDeep();
};

// nlohmann::json::parse with the depth limit: throws what it throws
// (parse_error, out_of_range for numbers it cannot hold) and JsonTooDeep.
nlohmann::json parseJson(std::string_view text);
// The same keeping each object's keys in the text's order: records whose
// values reach a model's chat template, which sees them as Python would.
nlohmann::ordered_json parseOrderedJson(std::string_view text);

// The same without exceptions: a discarded value on any error, and what
// was wrong in `problem` when given.
nlohmann::json parseJsonOrDiscard(std::string_view text, std::string* problem = nullptr);

// An integer as its JSON type says: a value stored as an integer that fits
// [min, max]; nullopt for a float (casting one beyond the target's range is
// undefined), a string, or an integer out of range. Unsigned values above
// the signed range are out of range, never wrapped.
std::optional<long long> jsonInteger(const nlohmann::json& value,
    long long min = std::numeric_limits<long long>::min(),
    long long max = std::numeric_limits<long long>::max());

// What jsonIntegerAt throws: one of nlohmann's exceptions, so that readers
// catching those report it with the rest.
struct JsonFieldError : nlohmann::json::exception {
    explicit JsonFieldError(const std::string& what);
};

// The integer field `key` of `object`, for readers that catch
// nlohmann::json::exception: its absence throws as at() does, and any other
// value than an integer in [min, max] throws JsonFieldError naming the key,
// the value and the range.
long long jsonIntegerAt(
    const nlohmann::json& object, const char* key, long long min, long long max);

} // namespace tb::common
