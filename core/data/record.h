#pragma once

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
    std::string role; // system, user or assistant
    std::string content;

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

    SourcePosition source;
};

} // namespace tb::data
