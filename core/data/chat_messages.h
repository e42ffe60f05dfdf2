#pragma once

// The turns of a conversation as records give them: OpenAI's messages
// ({role, content}, tool_calls, tool turns, weight) and ShareGPT's
// conversations ({from, value}, with LLaMA-Factory's function_call and
// observation turns), and the tools a record declares.
#include "data/json_fields.h"
#include "data/record.h"

#include <string>
#include <vector>

namespace tb::data::detail {

// The list of messages under `name`: roles system (first only), user,
// assistant and tool; an assistant turn may call tools (a non-empty
// tool_calls list, each with a function and its name) and then needs no
// content; a tool turn answers a call. An Error names the message and the
// field.
common::Status readMessages(
    const json& list, const std::string& name, std::vector<ChatMessage>& out);

// The record's "tools": a list of function schemas, or a JSON text holding
// one (as LLaMA-Factory's ShareGPT files and some Hub datasets store it);
// null when absent.
common::Status readTools(const json& object, json& tools);

} // namespace tb::data::detail
