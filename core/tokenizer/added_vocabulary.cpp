#include "tokenizer/added_vocabulary.h"

#include "tokenizer/normalizer.h"
#include "tokenizer/unicode.h"

#include <algorithm>

namespace tb::tokenizer::detail {

namespace {

char32_t lastCodePoint(std::string_view text, std::size_t end)
{
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
        --start;
    return nextCodePoint(text, start);
}

// Start of the run of whitespace that ends at `end`.
std::size_t whitespaceRunStart(std::string_view text, std::size_t end)
{
    while (end > 0) {
        std::size_t start = end - 1;
        while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
            --start;
        std::size_t pos = start;
        if (!isWhitespace(nextCodePoint(text, pos)))
            break;
        end = start;
    }
    return end;
}

// End of the run of whitespace that starts at `begin`.
std::size_t whitespaceRunEnd(std::string_view text, std::size_t begin)
{
    while (begin < text.size()) {
        std::size_t pos = begin;
        if (!isWhitespace(nextCodePoint(text, pos)))
            break;
        begin = pos;
    }
    return begin;
}

} // namespace

void AddedVocabulary::Trie::insert(std::string_view key, int token)
{
    if (nodes.empty())
        nodes.emplace_back();
    int node = 0;
    for (char c : key) {
        const auto byte = static_cast<unsigned char>(c);
        auto& children = nodes[static_cast<std::size_t>(node)].children;
        auto it = std::lower_bound(children.begin(), children.end(), byte,
            [](const auto& child, unsigned char b) { return child.first < b; });
        if (it != children.end() && it->first == byte) {
            node = it->second;
            continue;
        }
        const int created = static_cast<int>(nodes.size());
        children.insert(it, {byte, created});
        nodes.emplace_back();
        node = created;
    }
    // The first token with a given content keeps it, as HF's map does.
    if (nodes[static_cast<std::size_t>(node)].token < 0)
        nodes[static_cast<std::size_t>(node)].token = token;
    firstByte[static_cast<unsigned char>(key[0])] = true;
}

std::pair<std::size_t, int> AddedVocabulary::Trie::longestAt(
    std::string_view text, std::size_t pos) const
{
    std::pair<std::size_t, int> best{pos, -1};
    int node = 0;
    for (std::size_t i = pos; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const auto& children = nodes[static_cast<std::size_t>(node)].children;
        auto it = std::lower_bound(children.begin(), children.end(), byte,
            [](const auto& child, unsigned char b) { return child.first < b; });
        if (it == children.end() || it->first != byte)
            break;
        node = it->second;
        if (nodes[static_cast<std::size_t>(node)].token >= 0)
            best = {i + 1, nodes[static_cast<std::size_t>(node)].token};
    }
    return best;
}

void AddedVocabulary::parse(const JsonNode& node, const VocabMap& modelVocab)
{
    const std::size_t count = node.arraySize("a list of added tokens");
    const auto modelSize = static_cast<long long>(modelVocab.size());
    long long maxId = -1;
    for (std::size_t i = 0; i < count; ++i) {
        const JsonNode item = node.element(i);
        if (!item.isObject())
            item.fail(R"(an added token {"id": ..., "content": ...})");
        AddedToken token;
        // Checked like HF checks it, though HF (and we) assign ids below.
        item.member("id", "the token's id").integer(0, kMaxTokenId);
        token.content = item.member("content", "the token's text").string();
        token.special = item.boolean("special", false);
        token.singleWord = item.boolean("single_word", false);
        token.lstrip = item.boolean("lstrip", false);
        token.rstrip = item.boolean("rstrip", false);
        token.normalized = item.boolean("normalized", !token.special);
        if (token.content.empty())
            continue; // HF ignores empty tokens
        if (token.special)
            m_specialContents.insert(token.content);
        if (const auto known = m_idByContent.find(token.content); known != m_idByContent.end()) {
            // The same text again: its flags replace the earlier ones.
            token.id = known->second;
            m_tokens[static_cast<std::size_t>(m_indexById[static_cast<std::size_t>(token.id)])] =
                std::move(token);
            continue;
        }
        if (const auto it = modelVocab.find(token.content); it != modelVocab.end())
            token.id = it->second;
        else if (maxId < 0)
            token.id = static_cast<Id>(modelSize);
        else
            token.id =
                static_cast<Id>(maxId >= modelSize || modelSize == 0 ? maxId + 1 : modelSize);
        if (token.id > kMaxTokenId)
            item.fail(
                "fewer tokens (ids above " + std::to_string(kMaxTokenId) + " are not supported)");
        maxId = std::max<long long>(maxId, token.id);
        m_idByContent.emplace(token.content, token.id);
        const auto index = static_cast<std::size_t>(token.id);
        if (m_indexById.size() <= index)
            m_indexById.resize(index + 1, -1);
        m_indexById[index] = static_cast<int>(m_tokens.size());
        m_tokens.push_back(std::move(token));
    }
}

void AddedVocabulary::prepare(const Normalizer* normalizer)
{
    m_raw = Trie{};
    m_normalized = Trie{};
    // HF puts special tokens first, then the others, each in file order.
    for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t i = 0; i < m_tokens.size(); ++i) {
            AddedToken& token = m_tokens[i];
            if (token.special != (pass == 0))
                continue;
            token.decodeText = token.content;
            if (!token.normalized) {
                m_raw.insert(token.content, static_cast<int>(i));
                continue;
            }
            if (normalizer != nullptr)
                normalizer->normalize(token.decodeText);
            if (!token.decodeText.empty())
                m_normalized.insert(token.decodeText, static_cast<int>(i));
        }
    }
}

std::vector<Segment> AddedVocabulary::split(std::string_view text, bool normalizedSet) const
{
    const Trie& trie = normalizedSet ? m_normalized : m_raw;
    std::vector<Segment> segments;
    if (trie.empty() || text.empty()) {
        segments.push_back({0, text.size(), std::nullopt});
        return segments;
    }
    std::size_t segmentStart = 0; // where the text not yet emitted begins
    std::size_t pos = 0;
    while (pos < text.size()) {
        if (!trie.firstByte[static_cast<unsigned char>(text[pos])]) {
            ++pos;
            continue;
        }
        const auto [matchEnd, index] = trie.longestAt(text, pos);
        if (index < 0) {
            ++pos;
            continue;
        }
        const AddedToken& token = m_tokens[static_cast<std::size_t>(index)];
        std::size_t start = pos, stop = matchEnd;
        pos = matchEnd; // the search resumes after this match, kept or not
        if (token.singleWord) {
            const bool wordBefore = start > 0 && isWordChar(lastCodePoint(text, start));
            std::size_t next = stop;
            const bool wordAfter = stop < text.size() && isWordChar(nextCodePoint(text, next));
            if (wordBefore || wordAfter)
                continue;
        }
        if (token.lstrip)
            start = std::max(whitespaceRunStart(text, start), segmentStart);
        if (token.rstrip)
            stop = whitespaceRunEnd(text, stop);
        if (segmentStart < start)
            segments.push_back({segmentStart, start, std::nullopt});
        segments.push_back({start, stop, token.id});
        segmentStart = stop;
        // rstrip may have consumed text past the match; HF's search does
        // not skip it, but any match starting inside would overlap, so
        // resume after it as segments stay ordered.
        pos = std::max(pos, stop);
    }
    if (segmentStart < text.size())
        segments.push_back({segmentStart, text.size(), std::nullopt});
    return segments;
}

const AddedToken* AddedVocabulary::byId(Id id) const
{
    if (id < 0 || static_cast<std::size_t>(id) >= m_indexById.size())
        return nullptr;
    const int index = m_indexById[static_cast<std::size_t>(id)];
    return index < 0 ? nullptr : &m_tokens[static_cast<std::size_t>(index)];
}

std::optional<Id> AddedVocabulary::idOf(std::string_view content) const
{
    const auto it = m_idByContent.find(content);
    if (it == m_idByContent.end())
        return std::nullopt;
    return it->second;
}

bool AddedVocabulary::isSpecialContent(std::string_view content) const
{
    return m_specialContents.contains(content);
}

} // namespace tb::tokenizer::detail
