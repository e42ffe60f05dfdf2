#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tb::tokenizer::detail {

// Byte ranges [first, second) of matches in a text.
using MatchList = std::vector<std::pair<std::size_t, std::size_t>>;

// A pattern from tokenizer.json, compiled with PCRE2 (UTF, Unicode
// properties, JIT). HF compiles these with Oniguruma; the few escapes whose
// meaning differs between the two (\s, \w, \h) are rewritten to Oniguruma's
// sets before compiling, so matches are the same.
class Regex {
public:
    // nullptr and `error` set when the pattern does not compile.
    static std::shared_ptr<const Regex> compile(std::string_view pattern, std::string& error);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Non-overlapping matches, left to right, of valid UTF-8 `text`. A
    // pathological pattern that exceeds PCRE2's match limit ends the search
    // there (the rest counts as unmatched) rather than hanging.
    void findAll(std::string_view text, MatchList& out) const;

    // Oniguruma-compatible rewrite of the pattern (exposed for tests).
    static std::string toPcre2Syntax(std::string_view pattern);

private:
    struct Compiled;
    explicit Regex(std::unique_ptr<Compiled> compiled);
    std::unique_ptr<Compiled> m_compiled;
};

// Non-overlapping occurrences of a literal `needle` (HF's String patterns).
void findLiteral(std::string_view text, std::string_view needle, MatchList& out);

} // namespace tb::tokenizer::detail
