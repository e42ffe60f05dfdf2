#pragma once

#include "common/error.h"
#include "model/hf_config.h"

#include <optional>
#include <string>
#include <string_view>

// How the tensors and modules of a checkpoint's decoder are named where the
// decoder is the language model of a multimodal model (Gemma 3's
// Gemma3ForConditionalGeneration), against the names a causal LM gives them
// ("model.layers.0.self_attn.q_proj.weight", "lm_head.weight"), which are
// ours. For every other model the names are the same.
namespace tb::model {

// The prefix of the decoder's modules in the model the checkpoint was made
// for, as transformers 5 and peft name them: "model." for a causal LM,
// "model.language_model." for Gemma 3's image-text model.
std::string decoderModulePrefix(const HfConfig& config);

// The name transformers and peft give our decoder module or parameter
// `ours` ("model.layers.0.self_attn.q_proj") in the model the checkpoint
// was made for.
std::string decoderModuleName(const HfConfig& config, std::string_view ours);

// Our name of the tensor stored as `stored`; nullopt for a tensor of the
// vision tower or its projector, which the trainer leaves out. Reads both
// layouts of Gemma 3's checkpoints: transformers 5's
// (model.language_model.*, lm_head.*) and the one Google published
// (language_model.model.*, language_model.lm_head.*, vision_tower.*).
std::optional<std::string> languageModelTensorName(const HfConfig& config, std::string_view stored);

// The config.json of the language model alone, as Gemma3ForCausalLM
// loads it: the multimodal config's text_config, with the class, the head's
// tie, the dtype and the special tokens the multimodal config holds outside
// it. `configText` is the multimodal model's config.json, read from `origin`.
common::Result<std::string> languageModelConfigJson(
    std::string_view configText, const std::string& origin);

} // namespace tb::model
