#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tb::tokenizer::detail {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes the code point at `pos` of valid UTF-8 and advances `pos`.
inline char32_t nextCodePoint(std::string_view text, std::size_t& pos)
{
    const auto b0 = static_cast<unsigned char>(text[pos]);
    if (b0 < 0x80) {
        ++pos;
        return b0;
    }
    auto cont = [&](std::size_t i) { return static_cast<unsigned char>(text[pos + i]) & 0x3Fu; };
    char32_t cp;
    if (b0 < 0xE0) {
        cp = ((b0 & 0x1Fu) << 6) | cont(1);
        pos += 2;
    } else if (b0 < 0xF0) {
        cp = ((b0 & 0x0Fu) << 12) | (cont(1) << 6) | cont(2);
        pos += 3;
    } else {
        cp = ((b0 & 0x07u) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
        pos += 4;
    }
    return cp;
}

// Byte length of the UTF-8 sequence that starts with `lead` (valid text).
inline std::size_t utf8Length(unsigned char lead)
{
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

void appendUtf8(std::string& out, char32_t cp);

// Length of the valid UTF-8 prefix of `text`.
std::size_t validUtf8Prefix(std::string_view text);
inline bool isValidUtf8(std::string_view text)
{
    return validUtf8Prefix(text) == text.size();
}

// `text` with each maximal invalid subsequence replaced by U+FFFD, the rule of
// Unicode §3.9 that Rust's String::from_utf8_lossy follows.
std::string toValidUtf8(std::string_view text);

// Character classes as Rust's char methods and regex crate define them.
bool isWhitespace(char32_t cp); // White_Space (char::is_whitespace, regex \s)
bool isWordChar(char32_t cp); // regex \w: Alphabetic, M, Nd, Pc, Join_Control
bool isNumeric(char32_t cp); // char::is_numeric: Nd, Nl, No
bool isPunctuation(char32_t cp); // ASCII punctuation or a P* category
bool isCombiningMark(char32_t cp); // Mn

enum class NormalForm { Nfc, Nfd, Nfkc, Nfkd };
std::string normalizeUnicode(std::string_view text, NormalForm form);
// Per-character full lowercase mapping (char::to_lowercase), no context rules.
std::string lowercase(std::string_view text);

} // namespace tb::tokenizer::detail
