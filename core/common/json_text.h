#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

// JSON read from files and from other machines. No format Tunebench reads
// nests more than a few levels, and a value nested thousands deep (a
// 200 KB line of '[') overflows the stack in nlohmann's recursive dump and
// copy: such text is refused while it is parsed.
namespace tb::common {

inline constexpr int kMaxJsonDepth = 64;

struct JsonTooDeep : std::runtime_error {
    JsonTooDeep();
};

// nlohmann::json::parse with the depth limit: throws what it throws
// (parse_error, out_of_range for numbers it cannot hold) and JsonTooDeep.
nlohmann::json parseJson(std::string_view text);

// The same without exceptions: a discarded value on any error, and what
// was wrong in `problem` when given.
nlohmann::json parseJsonOrDiscard(std::string_view text, std::string* problem = nullptr);

} // namespace tb::common
