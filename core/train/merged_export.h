#pragma once

#include "common/error.h"
#include "train/compute_dtype.h"
#include "train/peft_adapter.h"

#include <functional>
#include <string>

namespace tb::train {

class LlamaForCausalLm;

// A model whose states are sharded, seen one unit (unitOfParameter's id)
// at a time: `gather` brings the unit, a collective every rank joins in the
// same order, and returns the master values of its trainable parameters on
// the rank that writes; `release` frees what it brought.
struct UnitGather {
    std::function<ParameterValues(int id)> gather;
    std::function<void(int id)> release;
};

// Writes `dir` (as a whole) as a Hugging Face model folder: model.safetensors
// with every weight under transformers' name, LoRA folded in
// (W + scaling B A, computed in fp32; NF4 bases dequantised), stored as
// `storeAs`; config.json and generation_config.json copied from
// `modelDir`; tokenizer.json, tokenizer_config.json, special_tokens_map.json
// and tokenizer.model copied from `tokenizerDir` where present. `values`
// replace parameters' own values (fp32 masters of a bf16 model). The file
// is streamed a unit at a time (a decoder layer, then the rest): each
// unit's tensors are made, appended and dropped before the next, through
// `units` where the run is sharded, so no rank holds the whole model.
common::Status exportMergedModel(LlamaForCausalLm& model, const std::string& dir,
    const std::string& modelDir, const std::string& tokenizerDir, ComputeDType storeAs,
    const ParameterValues& values = {}, const UnitGather* units = nullptr);
// What the other ranks of a sharded run do while one writes the merged
// export: the same gathers in the same order, nothing written.
void joinMergedExport(LlamaForCausalLm& model, const UnitGather& units);

// The dtype a model folder's config.json names in torch_dtype (bf16, fp16),
// fp32 otherwise: what a merged export is stored as.
ComputeDType storageDTypeOf(const std::string& torchDtype);

} // namespace tb::train
