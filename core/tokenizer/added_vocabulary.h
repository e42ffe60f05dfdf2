#pragma once

#include "tokenizer/json_node.h"
#include "tokenizer/vocabulary.h"

#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace tb::tokenizer::detail {

class Normalizer;

struct AddedToken {
    Id id = 0;
    std::string content;
    bool singleWord = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = true;
    bool special = false;
    // What decode() puts through the decoder: the normalized content for
    // tokens matched on normalized text, as HF does.
    std::string decodeText;
};

// A run of text, or one added token matched in it.
struct Segment {
    std::size_t begin;
    std::size_t end;
    std::optional<Id> token;
};

// Finds added tokens in text before the model sees it, as HF's
// AddedVocabulary does: leftmost-longest matches, tokens with
// normalized=false against the raw text and the others against normalized
// text, with single_word, lstrip and rstrip applied.
class AddedVocabulary {
public:
    // From tokenizer.json's "added_tokens" list. Ids are assigned as HF
    // assigns them, not read from the file: a token the model has keeps the
    // model's id, others count up from the model's vocabulary size.
    void parse(const JsonNode& node, const VocabMap& modelVocab);
    // Builds the matcher for normalized tokens (call after the normalizer is
    // known; tokens' contents are normalized like the text).
    void prepare(const Normalizer* normalizer);

    // Segments covering all of `text`, using the raw or the normalized set.
    std::vector<Segment> split(std::string_view text, bool normalizedSet) const;

    bool empty() const { return m_tokens.empty(); }
    const std::vector<AddedToken>& tokens() const { return m_tokens; }
    const AddedToken* byId(Id id) const;
    std::optional<Id> idOf(std::string_view content) const;
    bool isSpecialContent(std::string_view content) const;

private:
    // A byte trie over token contents for leftmost-longest search.
    struct Trie {
        struct Node {
            std::vector<std::pair<unsigned char, int>> children; // sorted by byte
            int token = -1; // index into m_tokens
        };
        std::vector<Node> nodes;
        bool firstByte[256] = {};
        void insert(std::string_view key, int token);
        // Longest token starting at `pos`: its end and index, or index -1.
        std::pair<std::size_t, int> longestAt(std::string_view text, std::size_t pos) const;
        bool empty() const { return nodes.size() <= 1; }
    };

    Trie m_raw;
    Trie m_normalized;
    std::vector<AddedToken> m_tokens;
    std::vector<int> m_indexById; // id -> index into m_tokens, or -1
    VocabMap m_idByContent;
    std::unordered_set<std::string, StringHash, std::equal_to<>> m_specialContents;
};

} // namespace tb::tokenizer::detail
