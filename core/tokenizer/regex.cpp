#include "tokenizer/regex.h"

#include "tokenizer/unicode.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstddef>

namespace tb::tokenizer::detail {

namespace {

// Oniguruma's \s for Unicode text is White_Space less nothing PCRE2 lacks
// except U+0085 (NEL); its \w is Letter, Mark, Decimal_Number and
// Connector_Punctuation (PCRE2 10.42's is L, N and '_'); its \h is a hex digit.
constexpr std::string_view kSpaceItems = "\\s\\x{85}";
constexpr std::string_view kWordItems = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";
constexpr std::string_view kHexItems = "0-9a-fA-F";

constexpr uint32_t kMatchLimit = 10'000'000;
constexpr uint32_t kDepthLimit = 100'000;

struct ThreadMatchState {
    pcre2_match_data* data = nullptr;
    pcre2_jit_stack* jitStack = nullptr;
    pcre2_match_context* context = nullptr;
    ThreadMatchState()
    {
        data = pcre2_match_data_create(1, nullptr);
        context = pcre2_match_context_create(nullptr);
        jitStack = pcre2_jit_stack_create(std::size_t{32} << 10, std::size_t{4} << 20, nullptr);
        if (context != nullptr) {
            pcre2_set_match_limit(context, kMatchLimit);
            pcre2_set_depth_limit(context, kDepthLimit);
            if (jitStack != nullptr)
                pcre2_jit_stack_assign(context, nullptr, jitStack);
        }
    }
    ~ThreadMatchState()
    {
        pcre2_match_data_free(data);
        pcre2_match_context_free(context);
        pcre2_jit_stack_free(jitStack);
    }
    ThreadMatchState(const ThreadMatchState&) = delete;
    ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

ThreadMatchState& matchState()
{
    // Match data and the JIT stack may not be shared between threads.
    thread_local ThreadMatchState state;
    return state;
}

} // namespace

struct Regex::Compiled {
    pcre2_code* code = nullptr;
    bool jit = false;
    ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(std::unique_ptr<Compiled> compiled)
    : m_compiled(std::move(compiled))
{
}

Regex::~Regex() = default;

std::string Regex::toPcre2Syntax(std::string_view pattern)
{
    std::string out;
    out.reserve(pattern.size() + 16);
    bool inClass = false;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[i + 1];
            auto set = [&](std::string_view items, bool negated) {
                if (inClass) {
                    // A negated set inside a class has no PCRE2 spelling
                    // without class algebra; keep PCRE2's own escape there.
                    if (negated)
                        out.append(pattern.substr(i, 2));
                    else
                        out.append(items);
                } else {
                    out += negated ? "[^" : "[";
                    out.append(items);
                    out += ']';
                }
            };
            switch (e) {
            case 's':
                set(kSpaceItems, false);
                break;
            case 'S':
                set(kSpaceItems, true);
                break;
            case 'w':
                set(kWordItems, false);
                break;
            case 'W':
                set(kWordItems, true);
                break;
            case 'h':
                set(kHexItems, false);
                break;
            case 'H':
                set(kHexItems, true);
                break;
            default:
                out.append(pattern.substr(i, 2));
                break;
            }
            ++i;
            continue;
        }
        if (!inClass && c == '[') {
            inClass = true;
            out += c;
            // A ']' right after '[' or '[^' is a literal member.
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') {
                out += '^';
                ++i;
            }
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') {
                out += ']';
                ++i;
            }
            continue;
        }
        if (inClass && c == ']')
            inClass = false;
        out += c;
    }
    return out;
}

std::shared_ptr<const Regex> Regex::compile(std::string_view pattern, std::string& error)
{
    const std::string rewritten = toPcre2Syntax(pattern);
    int errorCode = 0;
    PCRE2_SIZE errorOffset = 0;
    auto compiled = std::make_unique<Compiled>();
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
        PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &errorCode, &errorOffset, nullptr);
    if (compiled->code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(errorCode, message, sizeof(message));
        error = std::string(reinterpret_cast<const char*>(message)) + " (at offset "
            + std::to_string(errorOffset) + " of the pattern as PCRE2 reads it)";
        return nullptr;
    }
    compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
    return std::shared_ptr<const Regex>(new Regex(std::move(compiled)));
}

void Regex::findAll(std::string_view text, MatchList& out) const
{
    ThreadMatchState& state = matchState();
    if (state.data == nullptr)
        return;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    std::size_t start = 0;
    std::size_t lastEnd = std::string_view::npos;
    while (start <= text.size()) {
        // The text was checked to be valid UTF-8 before it got here.
        const uint32_t options = start > 0 ? PCRE2_NO_UTF_CHECK : 0;
        const int rc = m_compiled->jit ? pcre2_jit_match(m_compiled->code, subject, text.size(),
                           start, options, state.data, state.context)
                                       : pcre2_match(m_compiled->code, subject, text.size(), start,
                                           options, state.data, state.context);
        if (rc < 0)
            return; // no match, or a limit hit: the rest is unmatched
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
        const std::size_t begin = ovector[0], end = ovector[1];
        if (begin > text.size() || end > text.size() || end < begin)
            return; // \K games in a hostile pattern
        if (begin == end) {
            // An empty match right where the previous one ended is skipped,
            // as Oniguruma's iterator does; either way step one character on.
            if (begin != lastEnd)
                out.emplace_back(begin, end);
            if (begin >= text.size())
                return;
            start = begin + utf8Length(static_cast<unsigned char>(text[begin]));
            continue;
        }
        out.emplace_back(begin, end);
        lastEnd = end;
        start = end;
    }
}

void findLiteral(std::string_view text, std::string_view needle, MatchList& out)
{
    if (needle.empty())
        return;
    std::size_t pos = 0;
    while ((pos = text.find(needle, pos)) != std::string_view::npos) {
        out.emplace_back(pos, pos + needle.size());
        pos += needle.size();
    }
}

} // namespace tb::tokenizer::detail
