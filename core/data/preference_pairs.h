#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "data/packing.h"
#include "data/read_report.h"
#include "data/record.h"
#include "data/tokenized_example.h"
#include "tokenizer/tokenizer.h"

#include <cstddef>
#include <vector>

// Preference pairs for DPO, tokenized as TRL's DPOTrainer (1.16) tokenizes
// its plain (non-conversational) form, and laid out as the rows a batch of
// pairs is made of (docs/DATA.md, "Preference pairs").
namespace tb::data {

class ModelChatTemplate;

// The rows of one pair: the prompt followed by each completion, labels on
// the completion's tokens only.
struct PreferencePair {
    TokenizedExample chosen;
    TokenizedExample rejected;
    std::size_t promptTokens = 0; // the prompt's tokens at the start of both rows
};

// A pair's rows as TRL makes them: the tokenizer's EOS text is appended to
// each completion that does not already end with it; the prompt, prompt +
// chosen and prompt + rejected are each encoded whole, with the tokenizer's
// special tokens (BOS where its post-processor adds one); the prompt is the
// common prefix of the three (a token that merges across the boundary
// belongs to the completion) and the rest of each row its completion. An
// Error when the tokenizer names no EOS token, or a completion has no
// token of its own.
//
// A conversational pair as TRL 1.16 tokenizes one (trl/trainer/dpo_trainer.py,
// _prepare_dataset): the prompt's turns with the generation prompt, the
// prompt's and chosen turns, the prompt's and rejected turns, each through
// the model's chat template and tokenized without the tokenizer's own
// special tokens (apply_chat_template(tokenize=True)); the prompt is the
// common prefix of the three, and no EOS is appended (the template ends
// each turn). An Error when `model` is null (the model has no chat
// template, or data.template is none) or the template refuses the turns.
common::Result<PreferencePair> tokenizePreferencePair(const Record& record,
    const tokenizer::Tokenizer& tokenizer, const ModelChatTemplate* model = nullptr);

// Rows ready for batching, a pair's chosen row then its rejected row (pair i
// at rows 2i and 2i + 1; data::BatchOptions::rowsPerSample 2 batches them
// together). Each row is cut to `sequenceLength`, keeping its start (TRL's
// max_length with truncation_mode keep_start); a pair whose prompt alone
// fills `sequenceLength` is dropped, as TRL drops it, since no completion
// token would be left.
std::vector<TokenizedExample> preferenceRows(
    std::vector<PreferencePair> pairs, std::size_t sequenceLength, RowStats* stats = nullptr);

// Every record of `records` tokenized; a record that cannot be is reported
// through `report` as malformed (skipped, or an Error under `policy` fail).
common::Result<std::vector<PreferencePair>> tokenizePreferencePairs(
    const std::vector<Record>& records, const tokenizer::Tokenizer& tokenizer,
    config::MalformedPolicy policy, ReadReport& report, const ModelChatTemplate* model = nullptr);

} // namespace tb::data
