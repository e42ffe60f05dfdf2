#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tb::train {

// Splits plain text into documents at blank lines (lines of nothing but
// whitespace), trims each and drops empty ones; at most `limit` (0: all).
// This is how `eval` reads a text file, and the protocol under the
// stories260K reference loss.
std::vector<std::string> splitParagraphs(std::string_view text, std::size_t limit = 0);

} // namespace tb::train
