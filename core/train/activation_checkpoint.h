#pragma once

#include <ATen/core/Generator.h>

#include <optional>

namespace tb::train {

class LlamaForCausalLm;

// Activation checkpointing per decoder layer: in training, each layer's
// forward runs without keeping its intermediate tensors, and backward runs
// it again with grad to back-propagate (the reentrant scheme of
// torch.utils.checkpoint, the one that works from C++: LIBTORCH.md). Costs
// about one more forward per step. `dropoutGenerator`, when given, is the
// generator the layers draw dropout masks from: its state is saved at each
// layer's forward and replayed in the recompute, so both see the same masks.
// Passes with a KV cache and passes without grad run the layer directly.
void enableActivationCheckpointing(
    LlamaForCausalLm& model, std::optional<at::Generator> dropoutGenerator = std::nullopt);
void disableActivationCheckpointing(LlamaForCausalLm& model);

} // namespace tb::train
