#pragma once

#include "common/error.h"
#include "train/lora.h"

#include <torch/torch.h>

#include <map>
#include <string>

namespace tb::train {

class LlamaForCausalLm;

// Values that replace a parameter's own when writing (the fp32 master of a
// bf16 model), by the model's parameter name.
using ParameterValues = std::map<std::string, torch::Tensor>;

// PEFT's name of a LoRA tensor: "base_model.model." + the model's name, e.g.
// base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight.
std::string peftTensorName(const std::string& parameterName);

// Writes `dir` in PEFT's layout, as a whole (StagingDirectory):
// adapter_config.json (peft_type LORA, task_type CAUSAL_LM, r, lora_alpha,
// lora_dropout, target_modules, bias "none", ... the keys LoraConfig has had
// since PEFT 0.7, so older and newer PEFT read it; target_parameters, as
// peft 0.21 writes it) and adapter_model.safetensors with every LoRA matrix
// in fp32, the experts' under peft's names (peftParameterName).
common::Status savePeftAdapter(LlamaForCausalLm& model, const LoraSpec& spec,
    const std::string& dir, const std::string& baseModelPath, const ParameterValues& values = {});

// adapter_config.json of a PEFT LoRA adapter. Refused, naming the key:
// another peft_type, DoRA, bias other than none, modules_to_save, per-layer
// rank or alpha patterns, fan_in_fan_out, target_modules as a regex string.
// target_parameters (LoRA on the experts' fused weights) are read as given.
common::Result<LoraSpec> readPeftAdapterConfig(const std::string& dir);

// Copies an adapter's matrices into the model's LoRA layers, which must have
// the adapter's targets and rank (attachLora with readPeftAdapterConfig's
// spec). Every layer must be in the file and nothing else, shapes must
// match; names with PEFT's adapter name (".lora_A.default.weight") load too.
common::Status loadPeftAdapter(LlamaForCausalLm& model, const std::string& dir);

} // namespace tb::train
