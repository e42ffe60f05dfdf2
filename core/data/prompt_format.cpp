#include "data/prompt_format.h"

#include "data/model_chat_template.h"

#include "common/text.h"

namespace tb::data {

namespace {

using config::PromptTemplate;

// Stanford Alpaca's prompts (tatsu-lab/stanford_alpaca, train.py
// PROMPT_DICT): the response follows "### Response:\n".
constexpr std::string_view kAlpacaWithInput =
    "Below is an instruction that describes a task, paired with an input that provides "
    "further context. Write a response that appropriately completes the request.\n\n";
constexpr std::string_view kAlpacaNoInput =
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.\n\n";

// Llama 3 instruct format (Meta's "Model Cards & Prompt formats: Meta Llama
// 3"; transformers' chat_template trims each message's content).
constexpr std::string_view kLlama3Begin = "<|begin_of_text|>";
constexpr std::string_view kLlama3HeaderStart = "<|start_header_id|>";
constexpr std::string_view kLlama3HeaderEnd = "<|end_header_id|>\n\n";
constexpr std::string_view kLlama3EndOfTurn = "<|eot_id|>";

// ChatML (OpenAI's chat markup as used by Qwen, SmolLM, ...).
constexpr std::string_view kChatMlStart = "<|im_start|>";
constexpr std::string_view kChatMlEnd = "<|im_end|>";

// Mistral instruct v0.1/v0.2 (Mistral-7B-Instruct model card and its
// chat_template): <s>[INST] user [/INST]answer</s>[INST] user [/INST]answer</s>
constexpr std::string_view kMistralBos = "<s>";
constexpr std::string_view kMistralEos = "</s>";
constexpr std::string_view kMistralInstOpen = "[INST] ";
constexpr std::string_view kMistralInstClose = " [/INST]";

class Builder {
public:
    void prompt(std::string_view text) { add(text, false); }
    void answer(std::string_view text) { add(text, true); }
    std::vector<Segment> take() { return std::move(m_segments); }

private:
    // Adjacent pieces with the same flag merge, so the tokenizer sees as few
    // boundaries as possible.
    void add(std::string_view text, bool trainable)
    {
        if (text.empty())
            return;
        if (!m_segments.empty() && m_segments.back().trainable == trainable)
            m_segments.back().text += text;
        else
            m_segments.push_back(Segment{std::string(text), trainable});
    }
    std::vector<Segment> m_segments;
};

// An assistant turn the record does not leave untrained (weight 0).
bool learned(const ChatMessage& message)
{
    return message.role == "assistant" && message.trained;
}

FormattedExample llama3(const std::vector<ChatMessage>& messages)
{
    Builder out;
    out.prompt(kLlama3Begin);
    for (const ChatMessage& message : messages) {
        const std::string header =
            std::string(kLlama3HeaderStart) + message.role + std::string(kLlama3HeaderEnd);
        out.prompt(header);
        const std::string content = common::trim(message.content);
        if (learned(message)) {
            out.answer(content);
            out.answer(kLlama3EndOfTurn);
        } else {
            out.prompt(content);
            out.prompt(kLlama3EndOfTurn);
        }
    }
    return FormattedExample{out.take(), false, false, {}};
}

FormattedExample chatMl(const std::vector<ChatMessage>& messages)
{
    Builder out;
    for (const ChatMessage& message : messages) {
        out.prompt(std::string(kChatMlStart) + message.role + "\n");
        if (learned(message)) {
            out.answer(message.content);
            out.answer(kChatMlEnd);
        } else {
            out.prompt(message.content);
            out.prompt(kChatMlEnd);
        }
        out.prompt("\n");
    }
    return FormattedExample{out.take(), false, false, {}};
}

common::Result<FormattedExample> mistral(std::vector<ChatMessage> messages)
{
    // The format has no system turn: like later Mistral templates, the
    // system text opens the first user turn.
    if (!messages.empty() && messages.front().role == "system") {
        const std::string system = messages.front().content;
        messages.erase(messages.begin());
        if (!messages.empty() && messages.front().role == "user")
            messages.front().content = system + "\n\n" + messages.front().content;
    }
    Builder out;
    out.prompt(kMistralBos);
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const std::string expected = i % 2 == 0 ? "user" : "assistant";
        if (messages[i].role != expected)
            return common::Error{"message " + std::to_string(i) + " is " + messages[i].role
                    + ": the Mistral format needs user and assistant turns to "
                      "alternate, starting with user",
                {}};
        if (expected == "user") {
            out.prompt(kMistralInstOpen);
            out.prompt(messages[i].content);
            out.prompt(kMistralInstClose);
        } else if (learned(messages[i])) {
            out.answer(messages[i].content);
            out.answer(kMistralEos);
        } else {
            out.prompt(messages[i].content);
            out.prompt(kMistralEos);
        }
    }
    return FormattedExample{out.take(), false, false, {}};
}

common::Result<FormattedExample> alpaca(const Record& record)
{
    if (record.kind != RecordKind::Instruction)
        return common::Error{"the Alpaca prompt needs an instruction record, not a chat", {}};
    Builder out;
    out.prompt(alpacaPrompt(record.instruction, record.input));
    out.answer(record.response);
    return FormattedExample{out.take(), true, true, {}};
}

FormattedExample plain(const Record& record)
{
    Builder out;
    if (record.kind == RecordKind::Chat) {
        // Messages one per line, no markup: the answer is learned, the rest is context.
        for (std::size_t i = 0; i < record.messages.size(); ++i) {
            const ChatMessage& message = record.messages[i];
            const std::string text = message.content + (i + 1 < record.messages.size() ? "\n" : "");
            if (learned(message))
                out.answer(text);
            else
                out.prompt(text);
        }
    } else {
        std::string prompt = record.system.empty() ? "" : record.system + "\n\n";
        prompt += record.instruction;
        if (!record.input.empty())
            prompt += (record.instruction.empty() ? "" : "\n\n") + record.input;
        out.prompt(prompt + "\n");
        out.answer(record.response);
    }
    return FormattedExample{out.take(), true, true, {}};
}

} // namespace

std::vector<ChatMessage> asMessages(const Record& record)
{
    if (record.kind == RecordKind::Chat)
        return record.messages;
    std::vector<ChatMessage> messages;
    if (!record.system.empty())
        messages.push_back({"system", record.system});
    std::string user = record.instruction;
    if (!record.input.empty())
        user += (user.empty() ? "" : "\n\n") + record.input;
    messages.push_back({"user", user});
    messages.push_back({"assistant", record.response});
    return messages;
}

std::string FormattedExample::text() const
{
    std::string joined;
    for (const Segment& segment : segments)
        joined += segment.text;
    return joined;
}

std::string alpacaPrompt(std::string_view instruction, std::string_view input)
{
    std::string prompt(input.empty() ? kAlpacaNoInput : kAlpacaWithInput);
    prompt += "### Instruction:\n";
    prompt += instruction;
    if (!input.empty()) {
        prompt += "\n\n### Input:\n";
        prompt += input;
    }
    prompt += "\n\n### Response:\n";
    return prompt;
}

common::Result<FormattedExample> formatRecord(
    const Record& record, PromptTemplate format, const ModelChatTemplate* model)
{
    if (format == PromptTemplate::Model && record.kind != RecordKind::Text) {
        if (!model)
            return common::Error{"data.template: model, but the model has no chat template", {}};
        return model->format(record);
    }
    if (record.kind != RecordKind::Text && record.usesTools())
        return common::Error{"tools, a tool call or a tool's answer: the built-in "
                + std::string(config::toString(format)) + " format cannot write them",
            "set data.template to model: the model's own chat template writes them as the model "
            "was trained to read them"};
    common::Result<FormattedExample> result = common::Error{"", {}};
    if (record.kind == RecordKind::Text) {
        result = FormattedExample{{Segment{record.text, true}}, true, true, {}};
    } else {
        switch (format) {
        case PromptTemplate::Alpaca:
            result = alpaca(record);
            break;
        case PromptTemplate::Llama3:
            result = llama3(asMessages(record));
            break;
        case PromptTemplate::ChatMl:
            result = chatMl(asMessages(record));
            break;
        case PromptTemplate::Mistral:
            result = mistral(asMessages(record));
            break;
        case PromptTemplate::None:
            result = plain(record);
            break;
        case PromptTemplate::Auto:
        case PromptTemplate::Model:
            result = common::Error{"the prompt template is not resolved (auto)", {}};
            break;
        }
    }
    if (result.ok())
        result.value().source = record.source;
    return result;
}

std::vector<std::string> templateMarkers(PromptTemplate format)
{
    switch (format) {
    case PromptTemplate::Llama3:
        return {std::string(kLlama3Begin), std::string(kLlama3HeaderStart), "<|end_header_id|>",
            std::string(kLlama3EndOfTurn)};
    case PromptTemplate::ChatMl:
        return {std::string(kChatMlStart), std::string(kChatMlEnd)};
    case PromptTemplate::Mistral:
        return {std::string(kMistralBos), std::string(kMistralEos)};
    default:
        return {};
    }
}

} // namespace tb::data
