#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace tb::train {

// The router's auxiliary load-balancing loss (Fedus et al. 2021, "Switch
// Transformers", eq. 4-6) as transformers' load_balancing_loss_func computes
// it for Mixtral and Qwen3-MoE when the config sets output_router_logits:
// over every mixture-of-experts layer of one forward, with f_e the share of
// the top-k slots routed to expert e and P_e its mean router probability
// (both over the layers' unmasked tokens), the loss is E * sum_e f_e P_e.
//
// Only P carries a gradient (f counts a top-k choice), and f is known only
// once the last layer has routed; so each layer's forward records its
// counts and probability sums, and its output carries a node that, in
// backward, hands the probability sums the loss's gradient fixed by
// finish(). That node sits inside the layer's graph, so a layer recomputed
// in backward (activation checkpointing) or gathered by FSDP gets it too.
class RouterBalance {
public:
    RouterBalance(std::int64_t layers, std::int64_t experts, std::int64_t perToken);

    // Before a micro-batch's forward. `tokenMask`: [batch, tokens], 1 for a
    // real token, 0 for padding; `scale`: d(objective)/d(this loss), the
    // coefficient over the micro-batches the step averages.
    void begin(const torch::Tensor& tokenMask, double scale);
    // In layer `layer`'s forward, with its router logits [tokens, experts]:
    // records them and returns `output`, carrying their gradient under grad
    // mode. A recomputed forward records the same values again.
    torch::Tensor record(
        std::int64_t layer, const torch::Tensor& routerLogits, const torch::Tensor& output);
    // After the forward, before backward: the loss of the micro-batch (a
    // scalar on the device, not read back), and the gradient every layer's
    // probability sums receive fixed.
    torch::Tensor finish();

private:
    struct LayerRouting {
        torch::Tensor routedSlots; // [experts] fp32: top-k slots routed to each expert
        torch::Tensor probabilities; // [experts] fp32: router probabilities summed
    };

    std::int64_t m_experts;
    std::int64_t m_perToken;
    std::vector<LayerRouting> m_layers;
    torch::Tensor m_mask; // [tokens] fp32
    double m_scale = 0.0;
    // Filled in place by finish(); the nodes record() makes hold it.
    torch::Tensor m_gradient;
};

} // namespace tb::train
