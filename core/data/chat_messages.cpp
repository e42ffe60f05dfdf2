#include "data/chat_messages.h"

#include "common/json_text.h"

#include <algorithm>

namespace tb::data::detail {

namespace {

// The keys every format gives a turn; the rest reach the template as the
// message's fields.
bool isTurnKey(const std::string& key, bool shareGpt)
{
    return shareGpt ? key == "from" || key == "value" : key == "role" || key == "content";
}

// A ShareGPT speaker ("from") as a role: human and gpt are its own names
// for the user and the assistant, and LLaMA-Factory's observation is a
// tool's answer. Empty for any other.
std::string shareGptRole(const std::string& from)
{
    if (from == "human" || from == "user")
        return "user";
    if (from == "gpt" || from == "assistant" || from == "function_call")
        return "assistant";
    if (from == "observation" || from == "tool")
        return "tool";
    return from == "system" ? from : std::string{};
}

// LLaMA-Factory's function_call turn holds the call as JSON text,
// {"name", "arguments"} (or a list of them): as tool_calls, the turn has no
// content.
common::Status shareGptToolCall(ChatMessage& message)
{
    json call;
    try {
        call = common::parseOrderedJson(message.content);
    } catch (const json::exception& e) {
        return common::Error{"a function_call's value is not JSON (" + std::string(e.what())
                + "), expected {\"name\": ..., \"arguments\": ...}",
            {}};
    }
    json calls = call.is_array() ? call : json::array({call});
    json toolCalls = json::array();
    for (json& one : calls)
        toolCalls.push_back(json{{"type", "function"}, {"function", std::move(one)}});
    message.fields["tool_calls"] = std::move(toolCalls);
    message.content.clear();
    message.contentAbsent = true;
    return common::Ok{};
}

// Each call names a function: {"function": {"name": ...}} (OpenAI's and
// transformers' form).
common::Status checkToolCalls(const json& calls)
{
    if (!calls.is_array() || calls.empty())
        return common::Error{"'tool_calls' is " + typeName(calls)
                + (calls.is_array() ? " and empty" : "")
                + ", expected a list of {\"type\": \"function\", \"function\": {\"name\", "
                  "\"arguments\"}}",
            {}};
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const json* function = calls[i].is_object() ? lookup(calls[i], "function") : nullptr;
        const json* name = function && function->is_object() ? lookup(*function, "name") : nullptr;
        if (!name || !name->is_string())
            return common::Error{"'tool_calls[" + std::to_string(i)
                    + "]' has no function name, expected {\"function\": {\"name\": ...}}",
                {}};
    }
    return common::Ok{};
}

// OpenAI's weight: 0 or 1, on an assistant turn.
common::Status readWeight(const json& weight, ChatMessage& message)
{
    const bool integer = weight.is_number_integer() || weight.is_number_unsigned();
    const long long value = integer ? weight.get<long long>() : -1;
    if ((value != 0 && value != 1) || message.role != "assistant")
        return common::Error{"'weight' is " + weight.dump()
                + (message.role != "assistant" ? " on a " + message.role + " turn" : "")
                + ", expected 0 or 1 on an assistant turn",
            {}};
    message.trained = value == 1;
    return common::Ok{};
}

// The keys beyond role and content, in the record's order; weight is ours,
// never the template's, and a null is dropped as apply_chat_template drops
// a None.
common::Status readFields(const json& object, bool shareGpt, ChatMessage& message)
{
    for (const auto& [key, value] : object.items()) {
        if (isTurnKey(key, shareGpt) || value.is_null())
            continue;
        if (key == "weight") {
            if (common::Status status = readWeight(value, message); !status.ok())
                return status;
            continue;
        }
        if (key == "tool_calls") {
            if (message.role != "assistant")
                return common::Error{"'tool_calls' on a " + message.role
                        + " turn, expected only on an assistant turn",
                    {}};
            if (common::Status status = checkToolCalls(value); !status.ok())
                return status;
        }
        message.fields[key] = value;
    }
    return common::Ok{};
}

common::Status readContent(const json& object, bool shareGpt, ChatMessage& message)
{
    const std::string key = shareGpt ? "value" : "content";
    const json* content = lookup(object, key);
    if ((!content || content->is_null()) && message.hasToolCalls()) {
        message.contentAbsent = true;
        return common::Ok{};
    }
    return readText(object, key, true, message.content);
}

// One message: OpenAI's {role, content, ...}, or ShareGPT's {from, value}.
common::Status readMessage(const json& object, ChatMessage& message)
{
    const bool shareGpt = !object.contains("role") && object.contains("from");
    std::string speaker;
    if (common::Status status = readText(object, shareGpt ? "from" : "role", true, speaker);
        !status.ok())
        return status;
    message.role = shareGpt ? shareGptRole(speaker) : speaker;
    if (message.role != "system" && message.role != "user" && message.role != "assistant"
        && message.role != "tool")
        return common::Error{shareGpt
                ? "from '" + speaker
                    + "', expected system, human, gpt, function_call or observation"
                : "role '" + speaker + "', expected system, user, assistant or tool",
            {}};
    common::Status status = readFields(object, shareGpt, message);
    if (status.ok())
        status = readContent(object, shareGpt, message);
    if (status.ok() && shareGpt && speaker == "function_call")
        status = shareGptToolCall(message);
    return status;
}

} // namespace

common::Status readMessages(
    const json& list, const std::string& name, std::vector<ChatMessage>& out)
{
    if (!list.is_array() || list.empty())
        return common::Error{"'" + name + "' is " + typeName(list)
                + (list.is_array() ? " and empty" : "") + ", expected a list of {role, content}",
            {}};
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json& object = list[i];
        const std::string where = name + "[" + std::to_string(i) + "]";
        if (!object.is_object())
            return common::Error{where + " is " + typeName(object) + ", expected an object", {}};
        ChatMessage message;
        if (common::Status status = readMessage(object, message); !status.ok())
            return common::Error{where + ": " + status.error().message, {}};
        if (message.role == "system" && i != 0)
            return common::Error{where + ": a system message is only allowed first", {}};
        out.push_back(std::move(message));
    }
    return common::Ok{};
}

common::Status readTools(const json& object, json& tools)
{
    const json* given = lookup(object, "tools");
    if (!given || given->is_null())
        return common::Ok{};
    json list = *given;
    std::string notAList = " that is not a JSON list";
    if (given->is_string()) {
        try {
            list = common::parseOrderedJson(given->get<std::string>());
        } catch (const json::exception& e) {
            notAList = " that is not JSON (" + std::string(e.what()) + ")";
            list = json();
        }
    }
    const bool schemas = list.is_array()
        && std::all_of(list.begin(), list.end(), [](const json& t) { return t.is_object(); });
    if (!schemas)
        return common::Error{"'tools' is " + typeName(*given) + (given->is_string() ? notAList : "")
                + ", expected a list of function schemas (or a JSON text holding one)",
            {}};
    tools = list.empty() ? json() : std::move(list);
    return common::Ok{};
}

} // namespace tb::data::detail
