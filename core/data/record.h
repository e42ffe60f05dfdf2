#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace tb::data {

// Where a record came from, for messages a user can act on: the JSONL line,
// the CSV record's first line, or the JSON array element (with its line).
struct SourcePosition {
    std::string file;
    std::size_t line = 0; // 1-based; 0 when unknown
    std::optional<std::size_t> index; // 0-based element of a JSON array

    // "train.jsonl:12", "data.json:40 (record 7)", "data.json (record 7)"
    std::string toString() const;
};

struct ChatMessage {
    std::string role; // system, user, assistant or tool
    std::string content;
    // The message's other keys as the record gives them (tool_calls,
    // tool_call_id, name, ...), in the record's order: a model's own chat
    // template sees them all, as apply_chat_template passes a message whole.
    // An object, or null when there are none.
    nlohmann::ordered_json fields = nullptr;
    // The record has no content (or null): an assistant turn of tool calls
    // only. A model's template then sees no content key, as transformers
    // drops a None value.
    bool contentAbsent = false;
    // OpenAI's per-message weight: 0 leaves an assistant turn untrained.
    bool trained = true;

    bool hasToolCalls() const;
    bool operator==(const ChatMessage&) const = default;
};

enum class RecordKind { Instruction, Chat, Text, Preference };

// One training example as read, before any template or tokenizer.
struct Record {
    RecordKind kind = RecordKind::Instruction;
    // Instruction records (Alpaca, CSV/JSON through a column map).
    std::string system;
    std::string instruction;
    std::string input;
    std::string response;
    // Chat records.
    std::vector<ChatMessage> messages;
    // The functions a conversation may call (their JSON schemas, as the
    // record's "tools" gives them), passed to the model's template as
    // apply_chat_template's tools; null when none. Chat records and
    // conversational pairs.
    nlohmann::ordered_json tools = nullptr;
    // Plain text documents.
    std::string text;
    // Preference pairs (TRL's plain form): a prompt and two completions of
    // it, the one preferred and the one rejected.
    std::string prompt;
    std::string chosen;
    std::string rejected;
    // Conversational pairs (TRL's conversational form): the turns of the
    // prompt and of each completion; empty for plain pairs.
    std::vector<ChatMessage> promptMessages;
    std::vector<ChatMessage> chosenMessages;
    std::vector<ChatMessage> rejectedMessages;

    bool conversational() const { return !chosenMessages.empty(); }
    // Tools, a tool call or a tool's answer: what only a model's own
    // template can write.
    bool usesTools() const;

    SourcePosition source;
};

} // namespace tb::data
