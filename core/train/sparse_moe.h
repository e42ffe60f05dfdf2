#pragma once

#include "train/expert_lora.h"
#include "train/layers.h"
#include "train/router_balance.h"

#include <torch/torch.h>

namespace tb::train {

// How a mixture of experts routes (Fedus et al. 2021, "Switch Transformers";
// Jiang et al. 2024, "Mixtral of Experts"): the router's softmax in fp32, the
// top k experts of each token, their weights renormalised to sum to one or
// not, and whether the weights stay fp32 when they scale the experts'
// outputs (Mixtral) or are cast to the model's dtype first (Qwen3-MoE), as
// transformers 5 computes each.
struct ExpertRouting {
    std::int64_t experts = 0;
    std::int64_t perToken = 0;
    bool renormalize = false;
    bool fp32Weights = false;
};

// The MLP of a mixture-of-experts layer: a router ("gate", hidden -> experts,
// no bias) and `experts` gated MLPs ("experts.N.<projection>"), named as the
// checkpoint stores them so weights load and save by name.
class SparseMoe : public torch::nn::Module {
public:
    SparseMoe(const GatedMlpShape& expertShape, const ExpertRouting& routing,
        const torch::TensorOptions& options);
    // [..., hidden] -> [..., hidden]: each token's k experts, weighted.
    torch::Tensor forward(const torch::Tensor& input);

    // "experts.0.gate_proj", ...: every expert projection.
    std::vector<std::string> projectionNames() const;
    std::shared_ptr<LinearLayer> projection(const std::string& name);
    void replaceProjection(const std::string& name, std::shared_ptr<LinearLayer> layer);
    const GatedMlpShape& expertShape() const { return m_expertShape; }
    std::int64_t expertCount() const { return m_routing.experts; }

    // LoRA on every expert's gate and up rows or down weight (peft's
    // target_parameters), registered under "expert_lora.gate_up_proj" and
    // "expert_lora.down_proj"; null where that weight is not adapted.
    void attachLora(ExpertWeight weight, std::shared_ptr<ExpertLoraFactors> factors);
    ExpertLoraFactors* lora(ExpertWeight weight) const;
    // The (token, slot) pairs each expert took in the last forward: a
    // recomputed forward (activation checkpointing) routes the same rows
    // the same way, so after a backward this is the micro-batch's.
    const std::vector<std::int64_t>& lastRouted() const { return m_lastRouted; }
    // Training forwards report their routing to `balance` as layer `layer`
    // (not owned; null: no load-balancing loss).
    void setRouterBalance(RouterBalance* balance, std::int64_t layer)
    {
        m_balance = balance;
        m_layer = layer;
    }

private:
    // Each token's k experts and weights, one (token, slot) pair a row:
    // weights [tokens x k, 1], experts [tokens x k].
    struct Routes {
        torch::Tensor logits; // [tokens, experts], the router's dtype
        torch::Tensor weights;
        torch::Tensor experts;
    };
    Routes route(const torch::Tensor& rows);
    GatedMlp& expertNamed(const std::string& name, std::string& projection);
    // Expert e on its rows, with its LoRA updates where attached.
    torch::Tensor expertForward(std::int64_t expert, const torch::Tensor& rows);

    GatedMlpShape m_expertShape;
    ExpertRouting m_routing;
    std::shared_ptr<DenseLinear> m_router;
    std::vector<std::shared_ptr<GatedMlp>> m_experts;
    std::shared_ptr<torch::nn::Module> m_loraHolder; // "expert_lora"; null without
    std::shared_ptr<ExpertLoraFactors> m_gateUpLora;
    std::shared_ptr<ExpertLoraFactors> m_downLora;
    std::vector<std::int64_t> m_lastRouted;
    RouterBalance* m_balance = nullptr;
    std::int64_t m_layer = 0;
};

} // namespace tb::train
