#include "data/chat_template.h"

#include "common/atomic_file.h"
#include "common/json_document.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace tb::data {

namespace fs = std::filesystem;
using config::PromptTemplate;

std::optional<PromptTemplate> detectChatTemplate(std::string_view jinja)
{
    const auto has = [&](std::string_view marker) {
        return jinja.find(marker) != std::string_view::npos;
    };
    if (has("<|start_header_id|>") && has("<|eot_id|>"))
        return PromptTemplate::Llama3;
    if (has("<|im_start|>") && has("<|im_end|>"))
        return PromptTemplate::ChatMl;
    if (has("[INST]") && has("[/INST]") && !has("<<SYS>>"))
        return PromptTemplate::Mistral;
    return std::nullopt;
}

common::Result<std::optional<ChatTemplateText>> modelChatTemplateText(const std::string& path)
{
    std::error_code error;
    const fs::path folder =
        fs::is_directory(path, error) ? fs::path(path) : fs::path(path).parent_path();
    const fs::path configPath = folder / "tokenizer_config.json";
    std::string jinja;
    if (fs::is_regular_file(configPath, error)) {
        const common::Result<std::string> text = common::readFile(configPath.string());
        if (!text.ok())
            return text.error();
        try {
            const nlohmann::json config = common::parseJsonDocument(text.value());
            const auto it = config.is_object() ? config.find("chat_template") : config.end();
            if (config.is_object() && it != config.end()) {
                if (it->is_string()) {
                    jinja = it->get<std::string>();
                } else if (it->is_array()) {
                    for (const nlohmann::json& entry : *it) {
                        if (entry.is_object() && entry.value("name", "") == "default"
                            && entry.contains("template") && entry["template"].is_string())
                            jinja = entry["template"].get<std::string>();
                    }
                }
            }
        } catch (const nlohmann::json::exception& exception) {
            return common::Error::at(
                configPath.string(), "", std::string("not valid JSON: ") + exception.what());
        }
    }
    if (!jinja.empty())
        return std::optional<ChatTemplateText>{ChatTemplateText{jinja, configPath.string()}};
    const fs::path jinjaPath = folder / "chat_template.jinja";
    if (fs::is_regular_file(jinjaPath, error)) {
        const common::Result<std::string> text = common::readFile(jinjaPath.string());
        if (!text.ok())
            return text.error();
        if (!text.value().empty())
            return std::optional<ChatTemplateText>{
                ChatTemplateText{text.value(), jinjaPath.string()}};
    }
    return std::optional<ChatTemplateText>{};
}

common::Result<std::optional<PromptTemplate>> modelChatTemplate(const std::string& path)
{
    const common::Result<std::optional<ChatTemplateText>> text = modelChatTemplateText(path);
    if (!text.ok())
        return text.error();
    if (!text.value())
        return std::optional<PromptTemplate>{};
    return detectChatTemplate(text.value()->jinja);
}

common::Result<PromptTemplate> resolveTemplate(
    PromptTemplate requested, config::DataFormat format, bool hasModelTemplate)
{
    // Plain text and plain preference pairs are tokenized as written.
    if (format == config::DataFormat::Text || format == config::DataFormat::Preference)
        return PromptTemplate::None;
    if (requested == PromptTemplate::Model && !hasModelTemplate)
        return common::Error{"data.template: model, but the tokenizer folder has no chat template "
                             "(tokenizer_config.json chat_template, or chat_template.jinja)",
            "set data.template to llama3, chatml, mistral or none"};
    if (requested != PromptTemplate::Auto) {
        if (format == config::DataFormat::Chat && requested == PromptTemplate::Alpaca)
            return common::Error{"data.template: alpaca cannot format chat records",
                "use model, llama3, chatml, mistral or none"};
        return requested;
    }
    if (hasModelTemplate)
        return PromptTemplate::Model;
    if (format == config::DataFormat::Chat)
        return common::Error{"data.template: auto found no chat template in the model's "
                             "tokenizer folder (tokenizer_config.json or chat_template.jinja)",
            "set data.template to llama3, chatml, mistral or none"};
    return PromptTemplate::Alpaca;
}

} // namespace tb::data
