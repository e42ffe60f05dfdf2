#include "tokenizer/bpe_model.h"

#include "tokenizer/unicode.h"

#include <queue>

namespace tb::tokenizer::detail {

namespace {

constexpr std::size_t kMaxCachedPieceBytes = 256;
constexpr std::size_t kMaxCacheEntries = 200'000;

std::uint64_t pairKey(Id left, Id right)
{
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32)
        | static_cast<std::uint32_t>(right);
}

// One candidate merge in the queue: lowest rank first, then leftmost.
struct Candidate {
    Id rank;
    int position;
    Id id;
    bool operator<(const Candidate& other) const
    {
        // std::priority_queue pops the largest, so "less" means "later".
        if (rank != other.rank)
            return rank > other.rank;
        return position > other.position;
    }
};

std::string byteTokenName(unsigned byte)
{
    static constexpr char kHex[] = "0123456789ABCDEF";
    return std::string("<0x") + kHex[byte >> 4] + kHex[byte & 15] + ">";
}

bool isCharBoundary(std::string_view text, std::size_t pos)
{
    return pos >= text.size() || (static_cast<unsigned char>(text[pos]) & 0xC0) != 0x80;
}

} // namespace

std::unique_ptr<BpeModel> BpeModel::parse(const JsonNode& node)
{
    auto model = std::unique_ptr<BpeModel>(new BpeModel());
    if (const auto dropout = node.optionalMember("dropout")) {
        const double p = dropout->number();
        if (p < 0.0 || p > 1.0)
            dropout->fail("null or a probability from 0 to 1");
        if (p > 0.0)
            dropout->fail("null or 0 (BPE dropout makes ids random; we encode deterministically)");
    }
    model->m_prefix = node.string("continuing_subword_prefix", "");
    model->m_suffix = node.string("end_of_word_suffix", "");
    model->m_byteFallback = node.boolean("byte_fallback", false);
    model->m_fuseUnk = node.boolean("fuse_unk", false);
    model->m_ignoreMerges = node.boolean("ignore_merges", false);
    model->parseVocab(node.member("vocab", "an object mapping token strings to ids"));
    if (const auto unk = node.optionalMember("unk_token")) {
        const std::string token = unk->string("null or a token string");
        const auto id = model->find(token);
        if (!id)
            unk->fail("a token of model.vocab");
        model->m_unkId = id;
    }
    model->parseMerges(node.member("merges", "a list of merges"));
    model->m_hasAllByteTokens = true;
    for (unsigned b = 0; b < 256; ++b) {
        const auto id = model->find(byteTokenName(b));
        model->m_byteIds[b] = id.value_or(-1);
    }
    return model;
}

void BpeModel::parseVocab(const JsonNode& node)
{
    if (!node.isObject())
        node.fail("an object mapping token strings to ids");
    m_vocab.reserve(node.json().size());
    for (const auto& [token, value] : node.json().items()) {
        const JsonNode entry(value, node.path() + "[" + describe(nlohmann::json(token)) + "]");
        const Id id = static_cast<Id>(entry.integer(0, kMaxTokenId));
        m_vocab.emplace(token, id);
        std::size_t pos = 0;
        if (!token.empty()) {
            const char32_t cp = nextCodePoint(token, pos);
            if (pos == token.size())
                m_charIds.emplace(cp, id);
        }
    }
}

void BpeModel::parseMerges(const JsonNode& node)
{
    constexpr std::string_view kExpected = R"(a merge: "left right" or ["left", "right"])";
    const std::size_t count = node.arraySize("a list of merges");
    m_merges.reserve(count);
    Id rank = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const JsonNode item = node.element(i);
        std::string left, right;
        if (item.isString()) {
            const std::string line = item.string();
            // HF skips the "#version" header line of merges.txt files.
            if (line.starts_with("#version"))
                continue;
            const std::size_t space = line.find(' ');
            if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
                item.fail(R"(a merge "left right" with exactly one space)");
            left = line.substr(0, space);
            right = line.substr(space + 1);
        } else if (item.isArray()) {
            if (item.arraySize(kExpected) != 2)
                item.fail(kExpected);
            left = item.element(0).string(kExpected);
            right = item.element(1).string(kExpected);
        } else {
            item.fail(kExpected);
        }
        const auto leftId = find(left);
        const auto rightId = find(right);
        if (!leftId || !rightId)
            item.failWith("merge " + describe(item.json()) + " names token "
                + describe(nlohmann::json(leftId ? right : left))
                + ", which is not in model.vocab");
        if (right.size() < m_prefix.size() || !isCharBoundary(right, m_prefix.size()))
            item.failWith("merge " + describe(item.json())
                + ": the right part is shorter than continuing_subword_prefix");
        const std::string merged = left + right.substr(m_prefix.size());
        const auto mergedId = find(merged);
        if (!mergedId)
            item.failWith("merge " + describe(item.json()) + " makes "
                + describe(nlohmann::json(merged)) + ", which is not in model.vocab");
        // A repeated pair takes its last rank, as in HF's map.
        m_merges.insert_or_assign(pairKey(*leftId, *rightId), MergeTarget{rank, *mergedId});
        ++rank;
    }
}

std::optional<Id> BpeModel::find(std::string_view token) const
{
    const auto it = m_vocab.find(token);
    if (it == m_vocab.end())
        return std::nullopt;
    return it->second;
}

const BpeModel::MergeTarget* BpeModel::merge(Id left, Id right) const
{
    const auto it = m_merges.find(pairKey(left, right));
    return it == m_merges.end() ? nullptr : &it->second;
}

void BpeModel::initialSymbols(std::string_view piece, std::vector<Symbol>& symbols) const
{
    const bool plain = m_prefix.empty() && m_suffix.empty();
    // An unknown-token run waiting to be emitted (fuse_unk grows it).
    bool unkPending = false;
    std::size_t unkLength = 0;
    auto push = [&](Id id, std::size_t length) {
        const int index = static_cast<int>(symbols.size());
        symbols.push_back({id, index - 1, index + 1, length});
    };
    auto flushUnk = [&] {
        if (unkPending) {
            push(*m_unkId, unkLength);
            unkPending = false;
        }
    };
    std::size_t pos = 0;
    std::string text;
    while (pos < piece.size()) {
        const std::size_t begin = pos;
        const char32_t cp = nextCodePoint(piece, pos);
        const std::size_t length = pos - begin;
        std::optional<Id> id;
        std::string_view lookup = piece.substr(begin, length);
        if (plain) {
            const auto it = m_charIds.find(cp);
            if (it != m_charIds.end())
                id = it->second;
        } else {
            text.assign(begin > 0 ? m_prefix : std::string());
            text.append(lookup);
            if (pos == piece.size())
                text.append(m_suffix);
            lookup = text;
            id = find(text);
        }
        if (id) {
            flushUnk();
            push(*id, length);
            continue;
        }
        if (m_byteFallback) {
            bool all = true;
            for (char c : lookup)
                all = all && m_byteIds[static_cast<unsigned char>(c)] >= 0;
            if (all) {
                // HF adds the byte tokens without first emitting a pending
                // unknown token; it is emitted before the next known one.
                for (char c : lookup)
                    push(m_byteIds[static_cast<unsigned char>(c)], 1);
                continue;
            }
        }
        if (m_unkId) {
            if (unkPending && m_fuseUnk) {
                unkLength += length;
            } else {
                flushUnk();
                unkPending = true;
                unkLength = length;
            }
        }
    }
    flushUnk();
    if (!symbols.empty())
        symbols.back().next = -1;
}

void BpeModel::mergeAll(std::vector<Symbol>& symbols) const
{
    std::priority_queue<Candidate> queue;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
        if (const MergeTarget* target = merge(symbols[i].id, symbols[i + 1].id))
            queue.push({target->rank, static_cast<int>(i), target->id});
    }
    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        Symbol& current = symbols[static_cast<std::size_t>(top.position)];
        if (current.length == 0 || current.next < 0)
            continue;
        Symbol& right = symbols[static_cast<std::size_t>(current.next)];
        // Stale entries: the pair at this position changed since it was
        // queued. HF compares the resulting id, so do we.
        const MergeTarget* now = merge(current.id, right.id);
        if (now == nullptr || now->id != top.id)
            continue;
        current.id = top.id;
        current.length += right.length;
        current.next = right.next;
        right.length = 0;
        if (current.next >= 0 && static_cast<std::size_t>(current.next) < symbols.size())
            symbols[static_cast<std::size_t>(current.next)].prev = top.position;
        if (current.prev >= 0) {
            const Symbol& previous = symbols[static_cast<std::size_t>(current.prev)];
            if (const MergeTarget* target = merge(previous.id, current.id))
                queue.push({target->rank, current.prev, target->id});
        }
        if (current.next >= 0 && static_cast<std::size_t>(current.next) < symbols.size()) {
            const Symbol& next = symbols[static_cast<std::size_t>(current.next)];
            if (const MergeTarget* target = merge(current.id, next.id))
                queue.push({target->rank, top.position, target->id});
        }
    }
}

void BpeModel::tokenize(std::string_view piece, std::vector<Id>& out) const
{
    if (piece.empty())
        return;
    if (m_ignoreMerges) {
        if (const auto id = find(piece)) {
            out.push_back(*id);
            return;
        }
    }
    const bool cacheable = piece.size() <= kMaxCachedPieceBytes;
    if (cacheable) {
        std::lock_guard lock(m_cacheMutex);
        const auto it = m_cache.find(piece);
        if (it != m_cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<Symbol> symbols;
    symbols.reserve(piece.size());
    initialSymbols(piece, symbols);
    mergeAll(symbols);
    std::vector<Id> ids;
    for (const Symbol& symbol : symbols) {
        if (symbol.length > 0)
            ids.push_back(symbol.id);
    }
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
        std::lock_guard lock(m_cacheMutex);
        if (m_cache.size() < kMaxCacheEntries)
            m_cache.emplace(std::string(piece), std::move(ids));
    }
}

} // namespace tb::tokenizer::detail
