#pragma once

#include "common/error.h"

#include <memory>
#include <string_view>

namespace tb::tokenizer {

namespace detail {
class Regex;
}

// A regular expression that must match a whole text, as Python's
// re.fullmatch (peft matches a string target_modules so). Compiled with
// PCRE2, whose syntax is Python's for what such patterns use, under
// PCRE2's match and depth limits: a pathological pattern fails to match
// instead of hanging, and one nested too deep fails to compile.
class FullMatch {
public:
    static common::Result<FullMatch> compile(std::string_view pattern);
    bool matches(std::string_view text) const;

private:
    explicit FullMatch(std::shared_ptr<const detail::Regex> regex);
    std::shared_ptr<const detail::Regex> m_regex;
};

} // namespace tb::tokenizer
