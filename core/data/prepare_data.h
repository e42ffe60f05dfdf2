#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "data/packing.h"
#include "data/read_report.h"
#include "data/tokenized_example.h"
#include "tokenizer/tokenizer.h"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::data {

struct DataStats {
    ReadReport records; // read, and malformed (reading or formatting)
    std::size_t trainRecords = 0;
    std::size_t validationRecords = 0;
    config::PromptTemplate promptTemplate = config::PromptTemplate::None; // as resolved
    RowStats train;
    RowStats validation;
    std::vector<std::string> warnings; // e.g. a template marker the tokenizer splits
};

// Rows ready for batching: packed to data.sequence_length, or one example
// per row cut to it (see packing.h).
struct PreparedData {
    std::vector<TokenizedExample> train;
    std::vector<TokenizedExample> validation;
    DataStats stats;
};

struct PrepareCallbacks {
    // Called every few hundred records and at the end of each stage
    // ("read", "tokenize train", "tokenize validation"); returning false
    // cancels: prepareData() then returns an Error saying so.
    std::function<bool(std::string_view stage, std::size_t done, std::size_t total)> progress;
};

// Reads data.train (and data.validation_file, or holds out
// data.validation_split by the seed), formats each record with the resolved
// template, tokenizes it with loss on responses only, and packs or pads to
// the sequence length. With packing, records are shuffled (seeded) before
// they are concatenated so a row does not hold only neighbours from the file.
// Deterministic for a given config, tokenizer and files.
common::Result<PreparedData> prepareData(const config::RunConfig& config,
    const tokenizer::Tokenizer& tokenizer, const PrepareCallbacks& callbacks = {});

// The id to pad batches with: the tokenizer's pad token, else its EOS, else 0
// (padding is masked, so its value never reaches the loss).
std::int32_t padIdFor(const tokenizer::Tokenizer& tokenizer);

} // namespace tb::data
