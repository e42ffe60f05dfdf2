#pragma once

// The chat templates models are published with (tests/data/chat_templates)
// and a tokenizer folder that carries one: the demo model's tokenizer with
// the template in its tokenizer_config.json, as a model's folder has it.
#include "common/atomic_file.h"
#include "test_data.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace tb::test {

// The template's text; empty when the file cannot be read.
inline std::string publishedChatTemplate(const std::string& name)
{
    const auto text = common::readFile(sourcePath("tests/data/chat_templates/" + name));
    return text.ok() ? text.value() : std::string();
}

// `folder` (made) holding the demo tokenizer with the published template
// `name`; empty on failure.
inline std::string demoTokenizerWithTemplate(const std::string& folder, const std::string& name)
{
    namespace fs = std::filesystem;
    std::error_code error;
    fs::create_directories(folder, error);
    if (error
        || !fs::copy_file(fs::path(demoModelDir()) / "tokenizer.json",
            fs::path(folder) / "tokenizer.json", error))
        return {};
    const auto config = common::readFile(demoModelDir() + "/tokenizer_config.json");
    const std::string jinja = publishedChatTemplate(name);
    if (!config.ok() || jinja.empty())
        return {};
    nlohmann::json settings = nlohmann::json::parse(config.value(), nullptr, false);
    if (!settings.is_object())
        return {};
    settings["chat_template"] = jinja;
    return common::writeFileAtomic(folder + "/tokenizer_config.json", settings.dump()).ok()
        ? folder
        : std::string();
}

} // namespace tb::test
