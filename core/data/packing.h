#pragma once

#include "data/tokenized_example.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace tb::data {

struct RowStats {
    std::size_t examples = 0; // examples given
    std::size_t rows = 0; // rows made
    std::size_t tokens = 0; // tokens kept in rows (no padding counted)
    std::size_t trainableTokens = 0; // of those, tokens with a label
    std::size_t truncatedExamples = 0; // padding mode: examples cut to the row length
    std::size_t droppedExamples = 0; // padding mode: no trained token left after the cut
};

// Packing: the examples are concatenated into one stream, with `separatorId`
// (EOS) after every example that does not already end with it (labelled, so
// the end of a document is learned), and cut into rows of exactly
// `sequenceLength` tokens; the last row keeps the remainder (shorter, padded
// when batched), so every token appears exactly once. Labels travel with
// their tokens. As in Hugging Face's group_texts, attention is not masked
// between examples of a row.
std::vector<TokenizedExample> packExamples(std::span<const TokenizedExample> examples,
    std::size_t sequenceLength, std::optional<std::int32_t> separatorId, RowStats* stats = nullptr);

// Padding mode: one example per row, cut to `sequenceLength`; an example
// left with no trained token is dropped (its loss would be undefined).
std::vector<TokenizedExample> truncateExamples(
    std::vector<TokenizedExample> examples, std::size_t sequenceLength, RowStats* stats = nullptr);

} // namespace tb::data
