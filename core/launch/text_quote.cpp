#include "launch/text_quote.h"

#include "common/text.h"

#include <algorithm>
#include <array>
#include <cstdio>

namespace tb::launch {

namespace {

bool isShellSafe(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
}

bool isYamlPlainSafe(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || std::string_view("_./:@+-").find(c) != std::string_view::npos;
}

// YAML 1.1 booleans and nulls (PyYAML's resolver) plus 1.2's.
bool isReservedWord(std::string_view text)
{
    static constexpr std::array kWords = {
        "y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"};
    const std::string lower = common::toLower(text);
    return std::find(kWords.begin(), kWords.end(), lower) != kWords.end();
}

// Anything starting like a number (digits, a sign, a dot) may resolve to an
// int, float, or a 1.1 sexagesimal "1:30"; quoting those costs nothing.
bool mightBeNumber(std::string_view text)
{
    const char c = text.front();
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

} // namespace

std::string shellQuote(std::string_view text)
{
    // A word starting with '=' is zsh's `=cmd` expansion (the path of cmd).
    if (!text.empty() && text.front() != '=' && std::all_of(text.begin(), text.end(), isShellSafe))
        return std::string(text);
    std::string quoted = "'";
    for (const char c : text) {
        if (c == '\'')
            quoted += "'\\''";
        else
            quoted += c;
    }
    return quoted + "'";
}

std::string yamlString(std::string_view text)
{
    // '@', ':' and '-' may not, or had better not, start a plain scalar.
    const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), isYamlPlainSafe)
        && std::string_view("@:").find(text.front()) == std::string_view::npos
        && !isReservedWord(text) && !mightBeNumber(text) && text.back() != ':';
    if (plain)
        return std::string(text);
    std::string quoted = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            quoted += '\\';
            quoted += c;
        } else if (c == '\n') {
            quoted += "\\n";
        } else if (c == '\t') {
            quoted += "\\t";
        } else if (byte < 0x20 || byte == 0x7f) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\x%02x", byte);
            quoted += escape;
        } else {
            quoted += c;
        }
    }
    return quoted + "\"";
}

} // namespace tb::launch
