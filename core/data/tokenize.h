#pragma once

#include "common/error.h"
#include "data/prompt_format.h"
#include "data/tokenized_example.h"
#include "tokenizer/tokenizer.h"

namespace tb::data {

// Token ids of the whole text of `example` with labels on its trainable
// segments only. The text is encoded once in full (so ids are exactly what
// the tokenizer gives for the formatted example); a token belongs to the
// prompt when it lies wholly inside the prompt text, found by encoding each
// prefix up to a segment boundary and taking the common prefix of ids. A
// token that straddles a prompt/response boundary counts as response.
// With example.appendEos, the tokenizer's EOS is appended (trained); an
// Error when the tokenizer has none.
common::Result<TokenizedExample> tokenizeExample(
    const FormattedExample& example, const tokenizer::Tokenizer& tokenizer);

} // namespace tb::data
