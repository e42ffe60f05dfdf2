#include "common/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <numeric>

namespace tb::common {

std::string toLower(std::string_view text)
{
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
        [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower;
}

std::string_view trimView(std::string_view text)
{
    const auto isSpace = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    while (!text.empty() && isSpace(text.front()))
        text.remove_prefix(1);
    while (!text.empty() && isSpace(text.back()))
        text.remove_suffix(1);
    return text;
}

std::string trim(std::string_view text)
{
    return std::string(trimView(text));
}

std::string listNames(const std::vector<std::string>& names)
{
    std::string text;
    for (size_t i = 0; i < names.size(); ++i) {
        if (i > 0)
            text += i + 1 == names.size() ? " or " : ", ";
        text += names[i];
    }
    return text;
}

std::string didYouMean(const std::vector<std::string>& candidates, std::string_view got)
{
    const std::vector<std::string> nearest = nearestNames(candidates, got, 1);
    if (nearest.empty() || editDistance(toLower(nearest.front()), toLower(got)) > 3)
        return {};
    return "did you mean " + nearest.front() + "?";
}

std::string join(const std::vector<std::string>& parts, std::string_view separator)
{
    std::string text;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i)
            text += separator;
        text += parts[i];
    }
    return text;
}

std::string shortestNumber(double value)
{
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

std::string joinLines(const std::vector<std::string>& lines, size_t limit)
{
    std::string text;
    for (size_t i = 0; i < lines.size() && i < limit; ++i)
        text += (i ? "\n" : "") + lines[i];
    if (lines.size() > limit)
        text += "\n(" + std::to_string(lines.size() - limit) + " more)";
    return text;
}

std::vector<std::string> split(std::string_view text, char separator)
{
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t next = text.find(separator, start);
        parts.emplace_back(text.substr(start, next - start));
        if (next == std::string_view::npos)
            break;
        start = next + 1;
    }
    return parts;
}

bool isControlCharacter(char c)
{
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
}

std::string escapeControl(std::string_view text)
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (isControlCharacter(c)) {
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 15];
        } else {
            out += c;
        }
    }
    return out;
}

std::string clipText(std::string_view text, size_t maxBytes)
{
    if (text.size() <= maxBytes)
        return std::string(text);
    size_t cut = maxBytes;
    // Back over UTF-8 continuation bytes (10xxxxxx) to a sequence's start.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80)
        --cut;
    return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size() - cut)
        + " more bytes)";
}

size_t editDistance(std::string_view a, std::string_view b)
{
    std::vector<size_t> previous(b.size() + 1);
    std::vector<size_t> current(b.size() + 1);
    std::iota(previous.begin(), previous.end(), size_t{0});
    for (size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
        }
        std::swap(previous, current);
    }
    return previous[b.size()];
}

std::vector<std::string> nearestNames(
    const std::vector<std::string>& candidates, std::string_view query, size_t count)
{
    const std::string lowerQuery = toLower(query);
    std::vector<std::pair<size_t, std::string>> scored;
    scored.reserve(candidates.size());
    for (const std::string& candidate : candidates) {
        const std::string lower = toLower(candidate);
        // A candidate that contains the query is a better guess than any typo.
        const size_t distance =
            lower.find(lowerQuery) != std::string::npos ? 0 : editDistance(lower, lowerQuery);
        scored.emplace_back(distance, candidate);
    }
    std::stable_sort(scored.begin(), scored.end(),
        [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<std::string> names;
    for (size_t i = 0; i < scored.size() && i < count; ++i)
        names.push_back(scored[i].second);
    return names;
}

} // namespace tb::common
