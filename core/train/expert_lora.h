#pragma once

#include "common/error.h"
#include "train/layers.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace tb::train {

class LlamaForCausalLm;
struct LoraSpec;

// The two weights of a mixture of experts that LoRA adapts, as transformers 5
// holds them fused over the experts: gate_up_proj [experts, 2 x intermediate,
// hidden] (gate rows first) and down_proj [experts, hidden, intermediate].
enum class ExpertWeight { GateUp, Down };

// "gate_up_proj", "down_proj": transformers' parameter names.
const char* expertWeightName(ExpertWeight weight);

// LoRA on one fused expert weight as peft 0.21 computes it for
// target_parameters (its ParamWrapper): lora_A [rank x experts, in] with
// expert e's rows e*rank .. e*rank+rank-1, lora_B [out, rank x experts] with
// expert e's columns e, e+experts, e+2 experts ... (peft reshapes B to
// [out, rank, experts]); expert e's weight becomes W_e + scaling B_e A_e,
// scaling alpha / rank (rsLoRA: alpha / sqrt(rank)) with the rank per
// expert. No dropout: peft refuses it there. Registered as "lora_A" and
// "lora_B" so the matrices' names end as peft's do.
class ExpertLoraFactors : public torch::nn::Module {
public:
    ExpertLoraFactors(std::int64_t experts, std::int64_t rank, std::int64_t inFeatures,
        std::int64_t outFeatures, double scaling, const torch::TensorOptions& options);

    // scaling B_e A_e x for expert e's rows x [..., in]: [..., out]. The
    // same as peft's (W_e + scaling B_e A_e) x less W_e x, without making
    // the updated weight.
    torch::Tensor update(std::int64_t expert, const torch::Tensor& input);

    torch::Tensor& loraA() { return m_a->weight(); }
    torch::Tensor& loraB() { return m_b->weight(); }
    std::int64_t experts() const { return m_experts; }
    double scaling() const { return m_scaling; }

private:
    std::shared_ptr<DenseLinear> m_a;
    std::shared_ptr<DenseLinear> m_b;
    std::int64_t m_experts;
    double m_scaling;
};

// Expert e's factors of the matrices `a` and `b` laid out as above:
// A_e [rank, in] and B_e [out, rank] (views).
torch::Tensor expertLoraA(const torch::Tensor& a, std::int64_t experts, std::int64_t expert);
torch::Tensor expertLoraB(const torch::Tensor& b, std::int64_t experts, std::int64_t expert);
// scaling B_e A_e [out, in] in `dtype`: what folds into expert e's weight.
torch::Tensor expertLoraDelta(const torch::Tensor& a, const torch::Tensor& b, std::int64_t experts,
    std::int64_t expert, double scaling, torch::ScalarType dtype);

// Adds ExpertLoraFactors to every expert weight that a name of
// spec.targetParameters selects, matched as peft matches target_parameters:
// the weight's name in transformers ("model.layers.3.mlp.experts.down_proj")
// equals the target or ends with "." + target. A drawn as PEFT's default
// initialisation (uniform in +-1/sqrt(in)) from `generator`, B zero. A target
// that selects nothing, a model without experts and dropout above 0 are
// refused, naming the value. Returns transformers' names of the weights adapted.
common::Result<std::vector<std::string>> attachExpertLora(
    LlamaForCausalLm& model, const LoraSpec& spec, at::Generator& generator);

// Whether a parameter of the model is a matrix of ExpertLoraFactors.
bool isExpertLoraParameter(const std::string& name);

// peft's name (less its "base_model.model." prefix) of a parameter of the
// model: for an expert LoRA matrix ("model.layers.0.block_sparse_moe.
// expert_lora.gate_up_proj.lora_A.weight") the ParamWrapper's, which wraps
// transformers' experts module ("model.layers.0.mlp.experts.lora_A.weight";
// gate_up_proj's under "base_layer." where down_proj is adapted too, as peft
// nests the wrappers); any other name unchanged.
std::string peftParameterName(LlamaForCausalLm& model, const std::string& name);

} // namespace tb::train
