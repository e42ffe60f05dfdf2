#include "train/model_config.h"

#include "model/parameter_count.h"
#include "model/trainer_families.h"

#include <array>

namespace tb::train {

using common::Error;
using common::Result;

namespace {

constexpr std::array kArchitectures{"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
    "Qwen3ForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Phi3ForCausalLM",
    "MixtralForCausalLM", "Qwen3MoeForCausalLM"};
// Model types whose layer_types may mark layers as attending within a window.
constexpr std::array kWindowedLayerTypes{"mistral", "gemma2", "gemma3_text", "mixtral"};

template <size_t N> std::string joined(const std::array<const char*, N>& names)
{
    std::string out;
    for (const char* name : names)
        out += (out.empty() ? "" : ", ") + std::string(name);
    return out;
}

template <size_t N> bool contains(const std::array<const char*, N>& names, const std::string& value)
{
    for (const char* name : names) {
        if (value == name)
            return true;
    }
    return false;
}

Error refusal(const model::HfConfig& config, const std::string& field, const std::string& what,
    std::string hint = {})
{
    return Error::at(config.source, "field '" + field + "'", what, std::move(hint));
}

common::Status refuseUnknownModel(const model::HfConfig& config)
{
    if (config.fromTextConfig && !config.isGemma3Multimodal())
        return refusal(config, "text_config",
            "multimodal model_type '" + config.multimodalType + "' is not supported",
            "Gemma 3's (Gemma3ForConditionalGeneration) trains its language model; train another "
            "model's text model on its own");
    if (const model::TrainerFamilySupport support = model::trainerFamilySupport(config.modelType);
        !support.runs) {
        std::string supported;
        for (const std::string& type : model::trainerModelTypes())
            supported.append(supported.empty() ? "" : ", ").append(type);
        return refusal(config, "model_type",
            "'" + config.modelType + "' is not supported: " + support.reason,
            "supported: " + supported);
    }
    if (!config.architecture.empty() && !contains(kArchitectures, config.architecture)
        && !config.isGemma3Multimodal())
        return refusal(config, "architectures", "'" + config.architecture + "' is not supported",
            "supported: " + joined(kArchitectures));
    return common::Ok{};
}

// Features that change the computation in ways this runner does not do.
common::Status refuseUnsupported(const model::HfConfig& config)
{
    if (config.quantized)
        return refusal(config, "quantization_config", "quantised weights are not supported",
            "use the unquantised checkpoint");
    const std::string activation = config.gemmaScaling ? "gelu_pytorch_tanh" : "silu";
    if (config.activation != activation)
        return refusal(config, config.activationField,
            "activation '" + config.activation + "' is not supported",
            config.modelType + " MLPs use " + activation);
    if (!config.dropoutField.empty())
        return refusal(config, config.dropoutField,
            "dropout " + std::to_string(config.dropout) + " is not supported",
            "the trainer runs without attention, residual or embedding dropout; set it to 0.0");
    if (config.bidirectional)
        return refusal(config, "use_bidirectional_attention",
            "bidirectional attention is not supported",
            "a causal language model attends back only");
    if (config.partialRotaryFactor != 1.0 && config.modelType != "phi3")
        return refusal(config, "partial_rotary_factor",
            "got " + std::to_string(config.partialRotaryFactor) + ", " + config.modelType
                + " rotates the whole head (1.0)");
    if (config.headDim % 2 != 0)
        return refusal(config, "head_dim",
            "got " + std::to_string(config.headDim) + ", rotary embeddings need an even head size");
    if (config.rotaryDim() <= 0 || config.rotaryDim() % 2 != 0 || config.partialRotaryFactor > 1.0)
        return refusal(config, "partial_rotary_factor",
            "rotates " + std::to_string(config.rotaryDim()) + " of "
                + std::to_string(config.headDim)
                + " head dimensions, rotary embeddings need an even number, at most the head");
    for (const RopeScaling* scaling : {&config.ropeScaling, &config.slidingRopeScaling}) {
        const size_t frequencies = static_cast<size_t>(config.rotaryDim() / 2);
        if (scaling->type == RopeScalingType::LongRope && scaling == &config.slidingRopeScaling)
            return refusal(
                config, scaling->typeField, "LongRoPE on sliding-window layers is not supported");
        if (scaling->type == RopeScalingType::LongRope
            && (scaling->shortFactor.size() != frequencies
                || scaling->longFactor.size() != frequencies))
            return refusal(config, scaling->typeField,
                "LongRoPE has " + std::to_string(scaling->shortFactor.size()) + " short and "
                    + std::to_string(scaling->longFactor.size()) + " long factors, expected "
                    + std::to_string(frequencies) + " of each (one per rotary frequency)");
    }
    for (const RopeScaling* scaling : {&config.ropeScaling, &config.slidingRopeScaling}) {
        if (scaling->type == RopeScalingType::Other)
            return refusal(config, scaling->typeField,
                "rope scaling type '" + scaling->typeName + "' is not supported",
                "supported: linear, llama3, longrope (or none)");
    }
    if (config.routerJitterNoise != 0)
        return refusal(config, "router_jitter_noise",
            "router noise " + std::to_string(config.routerJitterNoise) + " is not supported",
            "set it to 0.0");
    if (config.slidingWindowLayers
        && (config.modelType == "qwen2" || config.modelType == "qwen3"
            || config.modelType == "qwen3_moe"))
        return refusal(config, "use_sliding_window",
            "sliding-window layers of " + config.modelType + " are not supported");
    for (const std::string& type : config.layerTypes) {
        const bool sliding =
            type == "sliding_attention" && contains(kWindowedLayerTypes, config.modelType);
        if (type != "full_attention" && !sliding)
            return refusal(config, "layer_types", "layer type \"" + type + "\" is not supported",
                "supported: full_attention, and sliding_attention for "
                    + joined(kWindowedLayerTypes));
    }
    return common::Ok{};
}

} // namespace

std::int64_t LlamaConfig::parameterCount() const
{
    return model::countParameters(*this).total;
}

Result<LlamaConfig> llamaConfigFrom(model::HfConfig config)
{
    if (auto status = refuseUnknownModel(config); !status)
        return status.error();
    if (auto status = refuseUnsupported(config); !status)
        return status.error();
    LlamaConfig llama;
    static_cast<model::HfConfig&>(llama) = std::move(config);
    return llama;
}

Result<LlamaConfig> parseLlamaConfig(std::string_view text, const std::string& fileName)
{
    Result<model::HfConfig> config = model::parseHfModelConfig(text, fileName);
    if (!config)
        return config.error();
    return llamaConfigFrom(std::move(config).value());
}

Result<LlamaConfig> loadLlamaConfig(const std::string& path)
{
    Result<model::HfConfig> config = model::readHfModelConfig(path);
    if (!config)
        return config.error();
    return llamaConfigFrom(std::move(config).value());
}

} // namespace tb::train
