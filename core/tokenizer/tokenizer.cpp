#include "tokenizer/tokenizer.h"

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace tb::tokenizer {

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl)
    : m_impl(std::move(impl))
{
}

void Tokenizer::Impl::encodeInto(std::string_view text, std::vector<TokenId>& ids) const
{
    // HF's order: added tokens that match raw text first; then each
    // remaining piece is normalized on its own, searched for added tokens
    // that match normalized text, pre-tokenized and given to the model.
    std::vector<detail::Piece> pieces;
    for (const detail::Segment& raw : added.split(text, false)) {
        if (raw.token) {
            ids.push_back(*raw.token);
            continue;
        }
        if (raw.begin == raw.end)
            continue;
        std::string normalized(text.substr(raw.begin, raw.end - raw.begin));
        if (normalizer)
            normalizer->normalize(normalized);
        for (const detail::Segment& part : added.split(normalized, true)) {
            if (part.token) {
                ids.push_back(*part.token);
                continue;
            }
            if (part.begin == part.end)
                continue;
            detail::Piece piece{normalized.substr(part.begin, part.end - part.begin),
                raw.begin == 0 && part.begin == 0};
            pieces.clear();
            if (preTokenizer)
                preTokenizer->split(std::move(piece), pieces);
            else
                pieces.push_back(std::move(piece));
            for (const detail::Piece& p : pieces)
                model->tokenize(p.text, ids);
        }
    }
}

std::optional<TokenId> Tokenizer::Impl::lookup(std::string_view token) const
{
    if (const auto id = added.idOf(token))
        return id;
    const auto& vocab = model->vocab();
    const auto it = vocab.find(token);
    if (it == vocab.end())
        return std::nullopt;
    return it->second;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool addSpecialTokens) const
{
    std::vector<TokenId> ids;
    ids.reserve(text.size() / 3 + 4);
    if (detail::isValidUtf8(text)) {
        m_impl->encodeInto(text, ids);
    } else {
        const std::string repaired = detail::toValidUtf8(text);
        m_impl->encodeInto(repaired, ids);
    }
    if (addSpecialTokens && m_impl->postProcessor)
        m_impl->postProcessor->apply(ids);
    return ids;
}

std::size_t Tokenizer::countTokens(std::string_view text, bool addSpecialTokens) const
{
    return encode(text, addSpecialTokens).size();
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skipSpecialTokens) const
{
    const Impl& impl = *m_impl;
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const TokenId id : ids) {
        std::string token;
        if (const detail::AddedToken* added = impl.added.byId(id)) {
            token = added->decodeText;
        } else if (id >= 0 && static_cast<std::size_t>(id) < impl.modelTokenById.size()
            && impl.modelTokenById[static_cast<std::size_t>(id)] != nullptr) {
            token = *impl.modelTokenById[static_cast<std::size_t>(id)];
        } else {
            continue; // HF skips ids it does not know
        }
        if (skipSpecialTokens && impl.added.isSpecialContent(token))
            continue;
        tokens.push_back(std::move(token));
    }
    std::string text;
    if (impl.decoder) {
        impl.decoder->decode(tokens);
        for (const std::string& token : tokens)
            text += token;
    } else {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (i > 0)
                text += ' ';
            text += tokens[i];
        }
    }
    return text;
}

std::size_t Tokenizer::vocabSize() const
{
    return m_impl->vocabSize;
}

std::optional<TokenId> Tokenizer::tokenToId(std::string_view token) const
{
    return m_impl->lookup(token);
}

std::optional<std::string> Tokenizer::idToToken(TokenId id) const
{
    if (const detail::AddedToken* added = m_impl->added.byId(id))
        return added->content;
    if (id >= 0 && static_cast<std::size_t>(id) < m_impl->modelTokenById.size()
        && m_impl->modelTokenById[static_cast<std::size_t>(id)] != nullptr)
        return *m_impl->modelTokenById[static_cast<std::size_t>(id)];
    return std::nullopt;
}

bool Tokenizer::isSpecial(TokenId id) const
{
    const detail::AddedToken* added = m_impl->added.byId(id);
    return added != nullptr && added->special;
}

std::optional<TokenId> Tokenizer::bosId() const
{
    return m_impl->bosId;
}

std::optional<TokenId> Tokenizer::eosId() const
{
    return m_impl->eosId;
}

std::optional<TokenId> Tokenizer::padId() const
{
    return m_impl->padId;
}

const TokenizerConfig& Tokenizer::config() const
{
    return m_impl->config;
}

const std::string& Tokenizer::sourcePath() const
{
    return m_impl->sourcePath;
}

std::string Tokenizer::summary() const
{
    const Impl& impl = *m_impl;
    std::string text = "BPE";
    if (impl.byteLevel)
        text += ", byte-level";
    if (impl.model->usesByteFallback())
        text += ", byte fallback";
    text += ", " + std::to_string(impl.vocabSize) + " ids ("
        + std::to_string(impl.model->vocab().size()) + " in the model, "
        + std::to_string(impl.added.tokens().size()) + " added), "
        + std::to_string(impl.model->mergeCount()) + " merges";
    return text;
}

} // namespace tb::tokenizer
