#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tb::tokenizer::test {

struct TokenizerVariant {
    std::string name;
    nlohmann::json tokenizer; // a complete tokenizer.json
};

// tokenizer.json files that exercise what the four real ones do not
// (Metaspace, Digits, Punctuation, split behaviours, normalizers, added-token
// options, unknown tokens, templates with EOS, array merges, GPT-2 ByteLevel
// with its own regex): built from stories260K's tokenizer and, when given, a
// small byte-level BPE cut out of Llama 3's merges.
std::vector<TokenizerVariant> tokenizerVariants(
    const nlohmann::json& stories, const nlohmann::json* llama3);

} // namespace tb::tokenizer::test
