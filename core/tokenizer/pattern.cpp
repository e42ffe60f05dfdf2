#include "tokenizer/pattern.h"

namespace tb::tokenizer::detail {

Pattern Pattern::parse(const JsonNode& node)
{
    constexpr std::string_view kExpected = R"({"String": "..."} or {"Regex": "..."})";
    if (!node.isObject())
        node.fail(kExpected);
    Pattern pattern;
    if (const auto literal = node.optionalMember("String")) {
        pattern.m_literal = literal->string("a literal string");
        return pattern;
    }
    if (const auto regex = node.optionalMember("Regex")) {
        const std::string text = regex->string("a regular expression (a string)");
        std::string error;
        pattern.m_regex = Regex::compile(text, error);
        if (!pattern.m_regex)
            regex->failWith(
                "regular expression " + describe(regex->json()) + " does not compile: " + error);
        return pattern;
    }
    node.fail(kExpected);
}

Pattern Pattern::literal(std::string text)
{
    Pattern pattern;
    pattern.m_literal = std::move(text);
    return pattern;
}

Pattern Pattern::regex(std::string_view expression)
{
    Pattern pattern;
    std::string error;
    pattern.m_regex = Regex::compile(expression, error);
    if (!pattern.m_regex)
        throw LoadError{{}, "built-in pattern does not compile: " + error};
    return pattern;
}

void Pattern::findAll(std::string_view text, MatchList& out) const
{
    if (m_regex)
        m_regex->findAll(text, out);
    else
        findLiteral(text, m_literal, out);
}

std::string Pattern::replaceAll(std::string_view text, std::string_view content) const
{
    MatchList matches;
    findAll(text, matches);
    if (matches.empty())
        return std::string(text);
    std::string out;
    out.reserve(text.size() + matches.size() * content.size());
    std::size_t last = 0;
    for (const auto& [begin, end] : matches) {
        out.append(text.substr(last, begin - last));
        out.append(content);
        last = end;
    }
    out.append(text.substr(last));
    return out;
}

} // namespace tb::tokenizer::detail
