#include "tokenizer/pre_tokenizer.h"

#include "tokenizer/metaspace.h"
#include "tokenizer/pattern.h"
#include "tokenizer/split_behavior.h"
#include "tokenizer/unicode.h"

#include <array>

namespace tb::tokenizer::detail {

namespace {

// GPT-2's pre-tokenization pattern, which ByteLevel applies when use_regex.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct ByteLevelTable {
    std::array<std::string, 256> charOf;
    std::array<int, 0x180> byteOf{};
    ByteLevelTable()
    {
        byteOf.fill(-1);
        // Printable bytes map to themselves; the others, in order, to 256 + n
        // (the published GPT-2 bytes_to_unicode table).
        int next = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const char32_t cp = printable ? static_cast<char32_t>(b) : 256 + next++;
            appendUtf8(charOf[b], cp);
            byteOf[cp] = b;
        }
    }
};

const ByteLevelTable& byteLevelTable()
{
    static const ByteLevelTable table;
    return table;
}

SplitBehavior parseBehavior(const JsonNode& node)
{
    const std::string name = node.string("a split behavior name");
    if (name == "Removed")
        return SplitBehavior::Removed;
    if (name == "Isolated")
        return SplitBehavior::Isolated;
    if (name == "MergedWithPrevious")
        return SplitBehavior::MergedWithPrevious;
    if (name == "MergedWithNext")
        return SplitBehavior::MergedWithNext;
    if (name == "Contiguous")
        return SplitBehavior::Contiguous;
    node.fail("one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

void emitRanges(Piece&& piece, const MatchList& ranges, std::vector<Piece>& out)
{
    if (ranges.size() == 1 && ranges[0].first == 0 && ranges[0].second == piece.text.size()) {
        out.push_back(std::move(piece));
        return;
    }
    for (const auto& [begin, end] : ranges)
        out.push_back({piece.text.substr(begin, end - begin), piece.atStart && begin == 0});
}

// Each character for which `predicate` holds is a match of its own, as HF's
// char-predicate patterns do.
template <typename Predicate> MatchList charMatches(std::string_view text, Predicate predicate)
{
    MatchList matches;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t begin = pos;
        if (predicate(nextCodePoint(text, pos)))
            matches.emplace_back(begin, pos);
    }
    return matches;
}

class SequencePreTokenizer final : public PreTokenizer {
public:
    explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
        : m_parts(std::move(parts))
    {
    }
    void split(Piece&& piece, std::vector<Piece>& out) const override
    {
        std::vector<Piece> current;
        current.push_back(std::move(piece));
        std::vector<Piece> next;
        for (const auto& part : m_parts) {
            next.clear();
            for (Piece& p : current)
                part->split(std::move(p), next);
            current.swap(next);
        }
        for (Piece& p : current)
            out.push_back(std::move(p));
    }

private:
    std::vector<std::unique_ptr<PreTokenizer>> m_parts;
};

class SplitPreTokenizer final : public PreTokenizer {
public:
    SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
        : m_pattern(std::move(pattern))
        , m_behavior(behavior)
        , m_invert(invert)
    {
    }
    void split(Piece&& piece, std::vector<Piece>& out) const override
    {
        MatchList matches;
        m_pattern.findAll(piece.text, matches);
        emitRanges(std::move(piece),
            applyBehavior(spansFromMatches(matches, piece.text.size(), m_invert), m_behavior), out);
    }

private:
    Pattern m_pattern;
    SplitBehavior m_behavior;
    bool m_invert;
};

// Splits on characters chosen by a predicate (Digits, Punctuation,
// WhitespaceSplit, CharDelimiterSplit).
template <typename Predicate> class CharSplitPreTokenizer final : public PreTokenizer {
public:
    CharSplitPreTokenizer(Predicate predicate, SplitBehavior behavior)
        : m_predicate(predicate)
        , m_behavior(behavior)
    {
    }
    void split(Piece&& piece, std::vector<Piece>& out) const override
    {
        const MatchList matches = charMatches(piece.text, m_predicate);
        emitRanges(std::move(piece),
            applyBehavior(spansFromMatches(matches, piece.text.size(), false), m_behavior), out);
    }

private:
    Predicate m_predicate;
    SplitBehavior m_behavior;
};

template <typename Predicate>
std::unique_ptr<PreTokenizer> charSplit(Predicate predicate, SplitBehavior behavior)
{
    return std::make_unique<CharSplitPreTokenizer<Predicate>>(predicate, behavior);
}

class ByteLevelPreTokenizer final : public PreTokenizer {
public:
    ByteLevelPreTokenizer(bool addPrefixSpace, bool useRegex)
        : m_addPrefixSpace(addPrefixSpace)
    {
        if (useRegex) {
            std::string error;
            m_regex = Regex::compile(kGpt2Pattern, error);
        }
    }
    void split(Piece&& piece, std::vector<Piece>& out) const override
    {
        if (m_addPrefixSpace && (piece.text.empty() || piece.text[0] != ' '))
            piece.text.insert(0, 1, ' ');
        const std::size_t first = out.size();
        if (m_regex) {
            MatchList matches;
            m_regex->findAll(piece.text, matches);
            emitRanges(std::move(piece),
                applyBehavior(
                    spansFromMatches(matches, piece.text.size(), false), SplitBehavior::Isolated),
                out);
        } else if (!piece.text.empty()) {
            out.push_back(std::move(piece));
        }
        for (std::size_t i = first; i < out.size(); ++i) {
            std::string mapped;
            appendByteLevel(mapped, out[i].text);
            out[i].text = std::move(mapped);
        }
    }

private:
    bool m_addPrefixSpace;
    std::shared_ptr<const Regex> m_regex;
};

class MetaspacePreTokenizer final : public PreTokenizer {
public:
    explicit MetaspacePreTokenizer(MetaspaceOptions options)
        : m_options(std::move(options))
    {
    }
    void split(Piece&& piece, std::vector<Piece>& out) const override
    {
        std::string text = Pattern::literal(" ").replaceAll(piece.text, m_options.replacement);
        const bool startsWithReplacement = text.starts_with(m_options.replacement);
        const bool prepend = m_options.scheme == PrependScheme::Always
            || (m_options.scheme == PrependScheme::First && piece.atStart);
        if (prepend && !startsWithReplacement)
            text.insert(0, m_options.replacement);
        Piece replaced{std::move(text), piece.atStart};
        if (!m_options.split) {
            if (!replaced.text.empty())
                out.push_back(std::move(replaced));
            return;
        }
        MatchList matches;
        findLiteral(replaced.text, m_options.replacement, matches);
        emitRanges(std::move(replaced),
            applyBehavior(spansFromMatches(matches, replaced.text.size(), false),
                SplitBehavior::MergedWithNext),
            out);
    }

private:
    MetaspaceOptions m_options;
};

std::unique_ptr<PreTokenizer> regexSplit(
    std::string_view pattern, SplitBehavior behavior, bool invert)
{
    return std::make_unique<SplitPreTokenizer>(Pattern::regex(pattern), behavior, invert);
}

} // namespace

const std::string& byteLevelChar(unsigned char byte)
{
    return byteLevelTable().charOf[byte];
}

int byteLevelByte(char32_t cp)
{
    return cp < 0x180 ? byteLevelTable().byteOf[cp] : -1;
}

void appendByteLevel(std::string& out, std::string_view bytes)
{
    const ByteLevelTable& table = byteLevelTable();
    out.reserve(out.size() + bytes.size() * 2);
    for (char c : bytes)
        out += table.charOf[static_cast<unsigned char>(c)];
}

std::unique_ptr<PreTokenizer> parsePreTokenizer(const JsonNode& node)
{
    const std::string type = node.typeName();
    if (type == "Sequence") {
        return std::make_unique<SequencePreTokenizer>(sequenceParts<PreTokenizer>(
            node, "pretokenizers", "a list of pre-tokenizers", parsePreTokenizer));
    }
    if (type == "Split")
        return std::make_unique<SplitPreTokenizer>(
            Pattern::parse(node.member("pattern", "a pattern")),
            parseBehavior(node.member("behavior", "a split behavior")),
            node.boolean("invert", false));
    if (type == "ByteLevel")
        return std::make_unique<ByteLevelPreTokenizer>(
            node.boolean("add_prefix_space", true), node.boolean("use_regex", true));
    if (type == "Metaspace")
        return std::make_unique<MetaspacePreTokenizer>(parseMetaspaceOptions(node));
    if (type == "Digits") {
        const bool individual = node.boolean("individual_digits", false);
        return charSplit([](char32_t cp) { return isNumeric(cp); },
            individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
    }
    if (type == "Punctuation") {
        const auto behavior = node.optionalMember("behavior");
        return charSplit([](char32_t cp) { return isPunctuation(cp); },
            behavior ? parseBehavior(*behavior) : SplitBehavior::Isolated);
    }
    if (type == "WhitespaceSplit")
        return charSplit([](char32_t cp) { return isWhitespace(cp); }, SplitBehavior::Removed);
    if (type == "Whitespace")
        return regexSplit(R"(\w+|[^\w\s]+)", SplitBehavior::Removed, true);
    if (type == "CharDelimiterSplit") {
        const char32_t delimiter = node.member("delimiter", "one character").character();
        return charSplit(
            [delimiter](char32_t cp) { return cp == delimiter; }, SplitBehavior::Removed);
    }
    if (type == "BertPreTokenizer") {
        std::vector<std::unique_ptr<PreTokenizer>> parts;
        parts.push_back(
            charSplit([](char32_t cp) { return isWhitespace(cp); }, SplitBehavior::Removed));
        parts.push_back(
            charSplit([](char32_t cp) { return isPunctuation(cp); }, SplitBehavior::Isolated));
        return std::make_unique<SequencePreTokenizer>(std::move(parts));
    }
    node.member("type", "")
        .fail("a pre-tokenizer type we support: Sequence, Split, ByteLevel, Metaspace, Digits, "
              "Punctuation, Whitespace, WhitespaceSplit, CharDelimiterSplit, BertPreTokenizer");
}

} // namespace tb::tokenizer::detail
