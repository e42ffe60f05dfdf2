#pragma once

#include "common/error.h"
#include "model/model_spec.h"

#include <string>
#include <string_view>

namespace tb::model {

// Reads a Hugging Face config.json (llama, mistral, qwen2, qwen3, phi3, gemma,
// gemma2 and other Llama-style decoders). Every field that changes the
// parameter count is read: hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads, num_key_value_heads, head_dim, vocab_size,
// tie_word_embeddings, attention_bias, mlp_bias. Mixture-of-experts configs
// are refused (the count would be wrong). Errors name the file and the field.
// `path` may be the config.json itself or the model folder holding it.
common::Result<ModelSpec> readHfConfig(const std::string& path);

// The same from text; `origin` names the source in errors.
common::Result<ModelSpec> parseHfConfig(std::string_view json, const std::string& origin);

} // namespace tb::model
