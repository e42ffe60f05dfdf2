#pragma once

#include "tokenizer/json_node.h"

#include <memory>
#include <string>
#include <vector>

namespace tb::tokenizer::detail {

// A piece of text on its way to the model. `atStart` is true for the piece
// that begins at offset 0 of the caller's original text (Metaspace's "first"
// prepend scheme needs it).
struct Piece {
    std::string text;
    bool atStart = false;
};

// One HF pre-tokenizer: splits pieces into smaller ones (and for ByteLevel,
// maps their bytes to the byte-level alphabet).
class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    // Appends the pieces `piece` splits into to `out`; empty pieces are dropped.
    virtual void split(Piece&& piece, std::vector<Piece>& out) const = 0;
};

// From tokenizer.json's "pre_tokenizer" object (Sequence, Split, ByteLevel,
// Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation,
// CharDelimiterSplit).
std::unique_ptr<PreTokenizer> parsePreTokenizer(const JsonNode& node);

// GPT-2's byte <-> character table used by ByteLevel.
const std::string& byteLevelChar(unsigned char byte); // UTF-8 of the char for `byte`
int byteLevelByte(char32_t cp); // -1 when `cp` is not in the table
void appendByteLevel(std::string& out, std::string_view bytes);

} // namespace tb::tokenizer::detail
