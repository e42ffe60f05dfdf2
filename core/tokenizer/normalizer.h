#pragma once

#include "tokenizer/json_node.h"

#include <memory>
#include <string>

namespace tb::tokenizer::detail {

// One HF normalizer: rewrites a piece of text before pre-tokenization.
class Normalizer {
public:
    virtual ~Normalizer() = default;
    virtual void normalize(std::string& text) const = 0;
};

// From tokenizer.json's "normalizer" object (Sequence, Prepend, Replace, NFC,
// NFD, NFKC, NFKD, Lowercase, Strip, StripAccents).
std::unique_ptr<Normalizer> parseNormalizer(const JsonNode& node);

} // namespace tb::tokenizer::detail
