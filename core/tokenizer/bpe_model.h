#pragma once

#include "tokenizer/json_node.h"
#include "tokenizer/vocabulary.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tb::tokenizer::detail {

// HF's BPE model: a vocabulary, ranked merges, optional unknown token,
// continuing-subword prefix, end-of-word suffix, byte fallback (<0xNN>
// tokens) and ignore_merges (whole pieces found in the vocabulary win).
class BpeModel {
public:
    // From tokenizer.json's "model" object; throws LoadError.
    static std::unique_ptr<BpeModel> parse(const JsonNode& node);

    // Appends the ids of one pre-tokenized piece to `out`.
    void tokenize(std::string_view piece, std::vector<Id>& out) const;

    const VocabMap& vocab() const { return m_vocab; }
    bool usesByteFallback() const { return m_byteFallback; }
    std::size_t mergeCount() const { return m_merges.size(); }

private:
    struct Symbol {
        Id id;
        int prev;
        int next;
        std::size_t length; // bytes of the piece it covers; 0 once merged away
    };
    struct MergeTarget {
        Id rank;
        Id id;
    };

    void parseVocab(const JsonNode& node);
    void parseMerges(const JsonNode& node);
    std::optional<Id> find(std::string_view token) const;
    void initialSymbols(std::string_view piece, std::vector<Symbol>& symbols) const;
    void mergeAll(std::vector<Symbol>& symbols) const;
    const MergeTarget* merge(Id left, Id right) const;

    VocabMap m_vocab;
    std::unordered_map<char32_t, Id> m_charIds; // single-character tokens, the hot path
    std::unordered_map<std::uint64_t, MergeTarget> m_merges;
    std::optional<Id> m_unkId;
    std::string m_prefix; // continuing_subword_prefix
    std::string m_suffix; // end_of_word_suffix
    bool m_byteFallback = false;
    bool m_fuseUnk = false;
    bool m_ignoreMerges = false;
    Id m_byteIds[256] = {};
    bool m_hasAllByteTokens = false;

    // Pieces seen before (words repeat a lot in real text); bounded.
    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::vector<Id>, StringHash, std::equal_to<>> m_cache;
};

} // namespace tb::tokenizer::detail
