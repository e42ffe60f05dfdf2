#pragma once

#include "tokenizer/regex.h"

#include <string>
#include <vector>

namespace tb::tokenizer::detail {

// What HF's SplitDelimiterBehavior does with the matched delimiters.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// One span of a text: a delimiter match or the text between matches.
struct Span {
    std::size_t begin;
    std::size_t end;
    bool isMatch;
};

// The spans covering all of a text of `length` bytes, given its matches.
std::vector<Span> spansFromMatches(const MatchList& matches, std::size_t length, bool invert);

// Applies `behavior` to `spans` and returns the kept [begin, end) ranges,
// empty ones dropped.
MatchList applyBehavior(const std::vector<Span>& spans, SplitBehavior behavior);

} // namespace tb::tokenizer::detail
