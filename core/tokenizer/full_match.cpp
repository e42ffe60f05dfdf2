#include "tokenizer/full_match.h"

#include "tokenizer/regex.h"

#include <string>

namespace tb::tokenizer {

FullMatch::FullMatch(std::shared_ptr<const detail::Regex> regex)
    : m_regex(std::move(regex))
{
}

common::Result<FullMatch> FullMatch::compile(std::string_view pattern)
{
    std::string error;
    auto regex = detail::Regex::compile("\\A(?:" + std::string(pattern) + ")\\z", error);
    if (!regex)
        return common::Error{error, {}};
    return FullMatch(std::move(regex));
}

bool FullMatch::matches(std::string_view text) const
{
    detail::MatchList found;
    m_regex->findAll(text, found);
    return !found.empty() && found.front().first == 0 && found.front().second == text.size();
}

} // namespace tb::tokenizer
