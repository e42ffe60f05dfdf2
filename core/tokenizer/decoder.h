#pragma once

#include "tokenizer/json_node.h"

#include <memory>
#include <string>
#include <vector>

namespace tb::tokenizer::detail {

// One HF decoder: maps the list of token strings to a new list; the final
// list is concatenated into the decoded text.
class Decoder {
public:
    virtual ~Decoder() = default;
    virtual void decode(std::vector<std::string>& tokens) const = 0;
};

// From tokenizer.json's "decoder" object (ByteLevel, ByteFallback, Fuse,
// Strip, Replace, Metaspace, BPEDecoder, Sequence).
std::unique_ptr<Decoder> parseDecoder(const JsonNode& node);

} // namespace tb::tokenizer::detail
