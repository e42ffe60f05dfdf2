#include "model/multimodal_language_model.h"

#include "common/json_text.h"

#include <nlohmann/json.hpp>

#include <array>
#include <utility>

namespace tb::model {

namespace {

constexpr std::string_view kOurDecoder = "model.";

// Stored prefix -> ours.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kRenamed{{
    {"model.language_model.", kOurDecoder},
    {"language_model.model.", kOurDecoder},
    {"language_model.lm_head.", "lm_head."},
    {"lm_head.", "lm_head."},
}};

constexpr std::array<std::string_view, 4> kLeftOut{"vision_tower.", "model.vision_tower.",
    "multi_modal_projector.", "model.multi_modal_projector."};

} // namespace

std::string decoderModulePrefix(const HfConfig& config)
{
    return config.isGemma3Multimodal() ? "model.language_model." : std::string(kOurDecoder);
}

std::string decoderModuleName(const HfConfig& config, std::string_view ours)
{
    if (!ours.starts_with(kOurDecoder))
        return std::string(ours);
    return decoderModulePrefix(config).append(ours.substr(kOurDecoder.size()));
}

std::optional<std::string> languageModelTensorName(const HfConfig& config, std::string_view stored)
{
    if (!config.isGemma3Multimodal())
        return std::string(stored);
    for (const auto& [from, to] : kRenamed)
        if (stored.starts_with(from))
            return std::string(to).append(stored.substr(from.size()));
    for (const std::string_view tower : kLeftOut)
        if (stored.starts_with(tower))
            return std::nullopt;
    // Anything else keeps its name, and the loader refuses it as a tensor
    // the model does not have.
    return std::string(stored);
}

common::Result<std::string> languageModelConfigJson(
    std::string_view configText, const std::string& origin)
{
    nlohmann::ordered_json outer;
    try {
        outer = common::parseOrderedJson(configText);
    } catch (const nlohmann::json::exception& e) {
        return common::Error::at(origin, "", std::string("not valid JSON: ") + e.what());
    }
    const auto text = outer.find("text_config");
    if (text == outer.end() || !text->is_object())
        return common::Error::at(origin, "field 'text_config'", "absent, expected an object");
    nlohmann::ordered_json config = *text;
    config["architectures"] = {"Gemma3ForCausalLM"};
    for (const char* field : {"tie_word_embeddings", "torch_dtype", "dtype", "bos_token_id",
             "eos_token_id", "pad_token_id"}) {
        const auto given = outer.find(field);
        const bool inner = config.contains(field) && !config[field].is_null();
        // The head's tie is the multimodal model's; the rest only fill gaps.
        if (given != outer.end() && !given->is_null()
            && (!inner || std::string_view(field) == "tie_word_embeddings"))
            config[field] = *given;
    }
    return config.dump(2) + "\n";
}

} // namespace tb::model
