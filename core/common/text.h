#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace tb::common {

std::string toLower(std::string_view text);
// `text` without leading and trailing white space (std::isspace).
std::string_view trimView(std::string_view text);
std::string trim(std::string_view text);
std::vector<std::string> split(std::string_view text, char separator);
// One line each, at most `limit` then "(N more)": a reader's problems as one
// Error message.
std::string joinLines(const std::vector<std::string>& lines, size_t limit = 20);
// "a, b or c": the names a value may take, in a message.
std::string listNames(const std::vector<std::string>& names);
// "did you mean lora?" when one of `candidates` is within a few edits of
// `got`, else empty.
std::string didYouMean(const std::vector<std::string>& candidates, std::string_view got);
// `parts` with `separator` between them.
std::string join(const std::vector<std::string>& parts, std::string_view separator);
// The shortest text that reads back as exactly `value` ("0.05", "65536",
// "1e+15"): what a written value must be for a reader to get it back.
std::string shortestNumber(double value);

// `text` with every control character (newlines, ESC, DEL) written as
// \xNN: text from a file or another machine shown on a terminal or in a log
// line, where an escape sequence could rewrite the screen and a newline
// could forge a line of our own output.
std::string escapeControl(std::string_view text);
bool isControlCharacter(char c);

// `text` when it is at most `maxBytes` long, else its first `maxBytes` bytes
// (never ending inside a UTF-8 sequence) and "... (N more bytes)": text from
// a file or another machine kept or shown where its size must be bounded.
std::string clipText(std::string_view text, size_t maxBytes);

// How many leading elements `a` and `b` share: characters of two texts,
// token ids of two sequences.
template <typename Sequence> size_t commonPrefixLength(const Sequence& a, const Sequence& b)
{
    return static_cast<size_t>(
        std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

// Levenshtein distance, for "did you mean" suggestions on unknown names.
size_t editDistance(std::string_view a, std::string_view b);

// The `count` candidates closest to `query` (case-insensitive), nearest first.
std::vector<std::string> nearestNames(
    const std::vector<std::string>& candidates, std::string_view query, size_t count = 3);

} // namespace tb::common
