#pragma once

#include "common/error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tb::tokenizer {

using TokenId = std::int32_t;

// What tokenizer_config.json (beside tokenizer.json) says, when it is there.
// transformers reads it; the `tokenizers` library does not, so it never
// changes the ids encode() returns. The trainer and generate use it to find
// the BOS/EOS/pad tokens and to know whether a chat template exists.
struct TokenizerConfig {
    bool present = false;
    std::optional<std::string> bosToken;
    std::optional<std::string> eosToken;
    std::optional<std::string> padToken;
    std::optional<std::string> unkToken;
    std::optional<bool> addBosToken;
    std::optional<bool> addEosToken;
    bool hasChatTemplate = false;
    std::string tokenizerClass;
    std::optional<long long> modelMaxLength;
};

// A Hugging Face tokenizer loaded from tokenizer.json: BPE, byte-level
// (Llama 3, Qwen2/3, GPT-2) or SentencePiece-style with byte fallback
// (Llama 2, Mistral, TinyLlama), with its normalizer, pre-tokenizer, added
// tokens, post-processor and decoder. Ids equal those of HF `tokenizers`.
//
// Cheap to copy (shared, immutable state); encode() and decode() are const and
// safe to call from several threads at once.
class Tokenizer {
public:
    // `path` is a tokenizer.json file or a model folder that holds one. A
    // tokenizer_config.json in the same folder is read when present. Every
    // malformed input gives an Error naming the file, the JSON field, the
    // value and what was expected.
    static common::Result<Tokenizer> load(const std::string& path);

    // Same, from text already in memory; `sourceName` names it in errors.
    static common::Result<Tokenizer> fromJson(
        std::string_view tokenizerJson, const std::string& sourceName);

    // Ids of `text`, as HF `Tokenizer.encode(text, add_special_tokens)` gives
    // them: added/special tokens matched first, then normalizer,
    // pre-tokenizer and model; the post-processor's BOS/EOS when
    // `addSpecialTokens`. Invalid UTF-8 in `text` is read as U+FFFD per bad
    // sequence (as a lossy decode would) and never crashes.
    std::vector<TokenId> encode(std::string_view text, bool addSpecialTokens = true) const;

    // Number of tokens encode() would return.
    std::size_t countTokens(std::string_view text, bool addSpecialTokens = true) const;

    // Text of `ids` through the tokenizer's decoder, as HF decode(ids,
    // skip_special_tokens). Unknown ids are skipped, like HF does.
    std::string decode(std::span<const TokenId> ids, bool skipSpecialTokens = false) const;

    // Highest id (model vocabulary and added tokens) + 1.
    std::size_t vocabSize() const;
    std::optional<TokenId> tokenToId(std::string_view token) const;
    std::optional<std::string> idToToken(TokenId id) const;
    // Added tokens marked "special" (e.g. <s>, <|begin_of_text|>).
    bool isSpecial(TokenId id) const;

    // From tokenizer_config.json's bos_token/eos_token/pad_token, looked up in
    // the vocabulary; nullopt when the config is absent or does not name one.
    std::optional<TokenId> bosId() const;
    std::optional<TokenId> eosId() const;
    std::optional<TokenId> padId() const;
    const TokenizerConfig& config() const;

    // The tokenizer.json this was loaded from, and a one-line description
    // ("BPE, byte-level, 128256 tokens").
    const std::string& sourcePath() const;
    std::string summary() const;

    struct Impl;

private:
    explicit Tokenizer(std::shared_ptr<const Impl> impl);
    std::shared_ptr<const Impl> m_impl;
};

} // namespace tb::tokenizer
