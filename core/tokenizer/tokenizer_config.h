#pragma once

#include "common/error.h"
#include "tokenizer/tokenizer.h"

#include <string>
#include <string_view>

namespace tb::tokenizer::detail {

// Reads the fields of transformers' tokenizer_config.json that we use.
common::Result<TokenizerConfig> parseTokenizerConfig(
    std::string_view text, const std::string& file);

} // namespace tb::tokenizer::detail
