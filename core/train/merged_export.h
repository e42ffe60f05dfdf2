#pragma once

#include "common/error.h"
#include "train/compute_dtype.h"
#include "train/peft_adapter.h"

#include <string>

namespace tb::train {

class LlamaForCausalLm;

// Writes `dir` (as a whole) as a Hugging Face model folder: model.safetensors
// with every weight under transformers' name, LoRA folded in
// (W + scaling B A, computed in fp32; NF4 bases dequantised), stored as
// `storeAs`; config.json and generation_config.json copied from
// `modelDir`; tokenizer.json, tokenizer_config.json, special_tokens_map.json
// and tokenizer.model copied from `tokenizerDir` where present. `values`
// replace parameters' own values (fp32 masters of a bf16 model).
common::Status exportMergedModel(LlamaForCausalLm& model, const std::string& dir,
    const std::string& modelDir, const std::string& tokenizerDir, ComputeDType storeAs,
    const ParameterValues& values = {});

// The dtype a model folder's config.json names in torch_dtype (bf16, fp16),
// fp32 otherwise: what a merged export is stored as.
ComputeDType storageDTypeOf(const std::string& torchDtype);

} // namespace tb::train
