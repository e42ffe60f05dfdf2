#pragma once

#include "common/error.h"
#include "tokenizer/tokenizer.h"

#include <cstdint>
#include <map>
#include <string>

namespace tb::tokenizer {

// Token counts of a dataset file, for the planner's time and cost.
struct DatasetTokenCount {
    std::string format; // "text", "jsonl" or "json"
    std::uint64_t records = 0; // lines of text, or JSON records
    std::uint64_t tokens = 0; // text fields only
    std::uint64_t tokensWithSpecial = 0; // plus the post-processor's BOS/EOS once per record
    std::uint64_t maxRecordTokens = 0; // with special tokens
    std::map<std::string, std::uint64_t>
        tokensByField; // JSON formats: "output", "messages.content"
};

// Counts the tokens of `path`: *.jsonl (one JSON record per line), *.json (an
// array of records), anything else as plain text with one record per
// non-empty line. A record's text fields are text, prompt, instruction,
// input, output, response, completion, system, context, question, answer,
// and content/value inside messages, conversations and instances lists.
// Errors name the file, the line or record, the field and what was expected.
common::Result<DatasetTokenCount> countDatasetTokens(
    const Tokenizer& tokenizer, const std::string& path);

} // namespace tb::tokenizer
