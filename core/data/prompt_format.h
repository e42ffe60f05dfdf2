#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "data/record.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::data {

// A piece of an example's text and whether the loss is taken on it.
struct Segment {
    std::string text;
    bool trainable = false;

    bool operator==(const Segment&) const = default;
};

// An example as text, ready for the tokenizer.
struct FormattedExample {
    std::vector<Segment> segments;
    // Let the tokenizer's post-processor add its BOS (Alpaca, none, text).
    // Chat templates write their own begin marker and set this false, as
    // transformers' apply_chat_template does.
    bool addSpecialTokens = true;
    // Append the tokenizer's EOS (trained) so the model learns to stop;
    // chat templates end each answer with their own end-of-turn marker.
    bool appendEos = false;
    SourcePosition source;

    std::string text() const;
};

class ModelChatTemplate;

// The text of `record` in `format` (not Auto: see resolveTemplate). Prompt
// parts are not trainable; responses (every assistant message) are. Text
// records are one trainable segment whatever the format. Model formats
// with `model`, the model's own template (an Error without one). An Error
// names what the record lacks for this format (e.g. Mistral needs user and
// assistant turns to alternate).
common::Result<FormattedExample> formatRecord(
    const Record& record, config::PromptTemplate format, const ModelChatTemplate* model = nullptr);

// An instruction record as a conversation: an optional system message, the
// user's instruction and input, the assistant's response. Chat records as
// they are.
std::vector<ChatMessage> asMessages(const Record& record);

// The special strings a chat format writes: the tokenizer should know each
// as one token, or the format is spelled out in pieces (a warning).
std::vector<std::string> templateMarkers(config::PromptTemplate format);

// The Alpaca prompt (everything before the response) of an instruction.
std::string alpacaPrompt(std::string_view instruction, std::string_view input);

} // namespace tb::data
