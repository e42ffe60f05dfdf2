#pragma once

#include "common/error.h"
#include "data/prompt_format.h"
#include "data/record.h"
#include "jinja/template.h"

#include <optional>
#include <string>

namespace tb::data {

// A model's own chat template (tokenizer_config.json's chat_template), and
// the variables transformers' apply_chat_template gives it: the messages
// (each with every key the record gives it: tool_calls, tool_call_id, ...),
// add_generation_prompt, the tokenizer's bos_token and eos_token, the
// record's tools (None when it has none) and documents as None.
class ModelChatTemplate {
public:
    // `origin` names the file the template came from, in messages. An Error
    // names the file, the template's line and column and what is wrong.
    static common::Result<ModelChatTemplate> parse(const std::string& jinja,
        const std::string& origin, std::optional<std::string> bosToken,
        std::optional<std::string> eosToken);

    // The conversation as the template writes it (instruction records as a
    // system, user and assistant turn; plain text is formatRecord's), tokenized later without the
    // tokenizer's own special tokens, as apply_chat_template does. The text
    // each assistant turn adds is trainable: from where the template's text
    // for the turns before it, with the generation prompt, ends, to where
    // its text for the turns up to it stops agreeing with the whole
    // conversation's (so an end-of-turn marker is learned, and a closing EOS
    // the template writes only at the very end is learned on the last
    // turn). Where the template marks the assistant's text with
    // {% generation %}, exactly those ranges are trainable. An assistant
    // turn of tool calls is trained like any other; a tool's answer is
    // context; a turn of weight 0 is not trained. An Error when
    // the template refuses the conversation (its raise_exception), or when
    // it writes earlier turns differently once later ones follow, so the
    // turns cannot be told apart.
    common::Result<FormattedExample> format(const Record& record) const;

    // The text of `messages` as apply_chat_template(messages, tokenize=False,
    // add_generation_prompt=generationPrompt) writes it; an Error when the
    // template refuses them.
    common::Result<std::string> renderText(const std::vector<ChatMessage>& messages,
        bool generationPrompt, const nlohmann::ordered_json& tools) const;

    const std::string& origin() const { return m_origin; }

private:
    // The first `count` messages as the template writes them.
    common::Result<jinja::Rendered> render(const std::vector<ChatMessage>& messages,
        std::size_t count, bool generationPrompt, const nlohmann::ordered_json& tools) const;

    jinja::Template m_template;
    std::string m_origin;
    std::optional<std::string> m_bos;
    std::optional<std::string> m_eos;
};

} // namespace tb::data
