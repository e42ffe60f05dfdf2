#pragma once

#include "common/error.h"
#include "config/run_config.h"

#include <optional>
#include <string>
#include <string_view>

namespace tb::data {

// Which built-in format a Jinja chat_template writes, told by its special
// markers: <|start_header_id|> and <|eot_id|> (Llama 3), <|im_start|>
// (ChatML), [INST] without <<SYS>> (Mistral; Llama 2's [INST] <<SYS>>
// format is not one of ours). nullopt when none matches.
std::optional<config::PromptTemplate> detectChatTemplate(std::string_view jinja);

// A tokenizer folder's chat template (or that of the folder of a
// tokenizer.json): tokenizer_config.json's chat_template, a string or a list
// of {name, template} (the "default" one), else chat_template.jinja; with
// the file it came from. nullopt when the folder has none.
struct ChatTemplateText {
    std::string jinja;
    std::string origin; // the file
};
common::Result<std::optional<ChatTemplateText>> modelChatTemplateText(const std::string& path);

// The built-in format a tokenizer folder's chat template writes (by its
// markers, detectChatTemplate); nullopt when it has none we recognise.
common::Result<std::optional<config::PromptTemplate>> modelChatTemplate(const std::string& path);

// The format to use for `requested` on data in `format`: Auto is the
// model's own template when it has one (`hasModelTemplate`), else Alpaca
// for instruction records; Model needs one. An Error says what to set.
common::Result<config::PromptTemplate> resolveTemplate(
    config::PromptTemplate requested, config::DataFormat format, bool hasModelTemplate);

} // namespace tb::data
