#pragma once

// JSON nested `depth` levels, the input of review M1: nlohmann parses it
// without recursion, but copying or dumping the tree recurses once a level,
// and 200,000 levels (400 KB of text) overflow an 8 MiB stack. Readers must
// refuse it while parsing.
#include <string>

namespace tb::test {

inline constexpr int kDeepJsonLevels = 200000;

// [[[ ... ]]]
inline std::string deepJsonArray(int depth = kDeepJsonLevels)
{
    return std::string(static_cast<size_t>(depth), '[')
        + std::string(static_cast<size_t>(depth), ']');
}

// {"a":{"a": ... {"a":1} ... }}
inline std::string deepJsonObject(int depth = kDeepJsonLevels)
{
    std::string text;
    text.reserve(static_cast<size_t>(depth) * 6 + 1);
    for (int i = 0; i < depth; ++i)
        text.append("{\"a\":");
    text.append("1");
    text.append(static_cast<size_t>(depth), '}');
    return text;
}

} // namespace tb::test
