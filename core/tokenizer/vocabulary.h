#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tb::tokenizer::detail {

using Id = std::int32_t;

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept
    {
        return std::hash<std::string_view>{}(text);
    }
};

// token string -> id, looked up by string_view without a copy.
using VocabMap = std::unordered_map<std::string, Id, StringHash, std::equal_to<>>;

// Ids above this are refused: no real vocabulary comes near it (the largest
// have ~260k tokens), and it bounds the id -> token table a hostile file can
// make us allocate.
inline constexpr long long kMaxTokenId = (1 << 22) - 1;

} // namespace tb::tokenizer::detail
