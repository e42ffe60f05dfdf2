#pragma once

#include "tokenizer/json_node.h"
#include "tokenizer/regex.h"

#include <memory>
#include <string>
#include <string_view>

namespace tb::tokenizer::detail {

// HF's pattern object: {"String": "literal"} or {"Regex": "..."}.
class Pattern {
public:
    static Pattern parse(const JsonNode& node);
    static Pattern literal(std::string text);
    // A built-in regular expression (throws LoadError if it does not compile).
    static Pattern regex(std::string_view expression);

    void findAll(std::string_view text, MatchList& out) const;
    // Every match replaced by `content`.
    std::string replaceAll(std::string_view text, std::string_view content) const;

private:
    std::string m_literal;
    std::shared_ptr<const Regex> m_regex; // null for a literal
};

} // namespace tb::tokenizer::detail
