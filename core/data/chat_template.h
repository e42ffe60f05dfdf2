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

// The chat format of a tokenizer folder (or of the folder of a
// tokenizer.json): tokenizer_config.json's chat_template, a string or a list
// of {name, template} (the "default" one), else chat_template.jinja. nullopt
// when the folder has no chat template or one we do not recognise.
common::Result<std::optional<config::PromptTemplate>> modelChatTemplate(const std::string& path);

// The format to use for `requested` (Auto resolved with the model's format)
// on data in `format`, or an Error that says what to set.
common::Result<config::PromptTemplate> resolveTemplate(config::PromptTemplate requested,
    config::DataFormat format, std::optional<config::PromptTemplate> modelTemplate);

} // namespace tb::data
