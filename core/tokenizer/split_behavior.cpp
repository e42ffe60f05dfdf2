#include "tokenizer/split_behavior.h"

#include <algorithm>

namespace tb::tokenizer::detail {

std::vector<Span> spansFromMatches(const MatchList& matches, std::size_t length, bool invert)
{
    std::vector<Span> spans;
    spans.reserve(matches.size() * 2 + 1);
    if (length == 0) {
        spans.push_back({0, 0, invert});
        return spans;
    }
    std::size_t last = 0;
    for (const auto& [begin, end] : matches) {
        if (begin > last)
            spans.push_back({last, begin, invert});
        spans.push_back({begin, end, !invert});
        last = end;
    }
    if (last < length)
        spans.push_back({last, length, invert});
    return spans;
}

MatchList applyBehavior(const std::vector<Span>& spans, SplitBehavior behavior)
{
    MatchList kept;
    kept.reserve(spans.size());
    switch (behavior) {
    case SplitBehavior::Removed:
        for (const Span& s : spans) {
            if (!s.isMatch)
                kept.emplace_back(s.begin, s.end);
        }
        break;
    case SplitBehavior::Isolated:
        for (const Span& s : spans)
            kept.emplace_back(s.begin, s.end);
        break;
    case SplitBehavior::MergedWithPrevious: {
        bool previousMatch = false;
        for (const Span& s : spans) {
            if (s.isMatch && !previousMatch && !kept.empty())
                kept.back().second = s.end;
            else
                kept.emplace_back(s.begin, s.end);
            previousMatch = s.isMatch;
        }
        break;
    }
    case SplitBehavior::MergedWithNext: {
        bool previousMatch = false;
        for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
            if (it->isMatch && !previousMatch && !kept.empty())
                kept.back().first = it->begin;
            else
                kept.emplace_back(it->begin, it->end);
            previousMatch = it->isMatch;
        }
        std::reverse(kept.begin(), kept.end());
        break;
    }
    case SplitBehavior::Contiguous: {
        bool previousMatch = false;
        for (const Span& s : spans) {
            if (s.isMatch == previousMatch && !kept.empty())
                kept.back().second = s.end;
            else
                kept.emplace_back(s.begin, s.end);
            previousMatch = s.isMatch;
        }
        break;
    }
    }
    std::erase_if(kept, [](const auto& range) { return range.first == range.second; });
    return kept;
}

} // namespace tb::tokenizer::detail
