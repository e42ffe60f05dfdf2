#pragma once

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

#include <memory>
#include <string>
#include <vector>

namespace tb::tokenizer {

// Everything a loaded tokenizer.json holds; immutable once built (the BPE
// cache inside the model is guarded by its own lock).
struct Tokenizer::Impl {
    std::string sourcePath;
    std::unique_ptr<detail::Normalizer> normalizer;
    std::unique_ptr<detail::PreTokenizer> preTokenizer;
    std::unique_ptr<detail::BpeModel> model;
    std::unique_ptr<detail::PostProcessor> postProcessor;
    std::unique_ptr<detail::Decoder> decoder;
    detail::AddedVocabulary added;
    std::vector<const std::string*> modelTokenById; // into model->vocab(); null for holes
    std::size_t vocabSize = 0;
    bool byteLevel = false;
    TokenizerConfig config;
    std::optional<TokenId> bosId;
    std::optional<TokenId> eosId;
    std::optional<TokenId> padId;

    void encodeInto(std::string_view validText, std::vector<TokenId>& ids) const;
    std::optional<TokenId> lookup(std::string_view token) const;
};

} // namespace tb::tokenizer
