#pragma once

#include "common/error.h"
#include "common/training_limits.h"
#include "train/layers.h"
#include "train/model_config.h"

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

namespace tb::train {

class LlamaForCausalLm;

// LoRA (Hu et al., arXiv:2106.09685) as PEFT computes it:
// y = base(x) + scaling * B(A(dropout(x))), scaling = alpha / r (alpha /
// sqrt(r) with rsLoRA), A [r, in], B [out, r], the base frozen. The layers
// are registered as "base_layer", "lora_A" and "lora_B", so parameter names
// read "model.layers.0.self_attn.q_proj.lora_A.weight", PEFT's names less
// its "base_model.model." prefix and adapter name.
class LoraLinear : public LinearLayer {
public:
    // Dropout masks come from `dropoutGenerator` (shared by all layers of a
    // run, so a checkpoint saves one state); without one, from LibTorch's default.
    LoraLinear(std::shared_ptr<LinearLayer> base, std::int64_t rank, double scaling, double dropout,
        std::optional<at::Generator> dropoutGenerator, const torch::TensorOptions& options);

    torch::Tensor forward(const torch::Tensor& input) override;
    std::int64_t inFeatures() const override { return m_base->inFeatures(); }
    std::int64_t outFeatures() const override { return m_base->outFeatures(); }

    LinearLayer& base() { return *m_base; }
    torch::Tensor& loraA() { return m_a->weight(); }
    torch::Tensor& loraB() { return m_b->weight(); }
    double scaling() const { return m_scaling; }
    std::int64_t rank() const { return m_rank; }
    // Disabled, the layer is its base alone (no dropout drawn): DPO's
    // reference model, as peft's disable_adapter() gives it.
    void setEnabled(bool enabled) { m_enabled = enabled; }
    bool enabled() const { return m_enabled; }

    // The base weight with the update folded in, W + scaling B A, in fp32
    // (fp64 for an fp64 model); an NF4 base is dequantised first.
    torch::Tensor mergedWeight();
    torch::Tensor baseWeight(torch::ScalarType dtype);
    torch::Tensor baseBias(); // undefined without

private:
    std::shared_ptr<LinearLayer> m_base;
    std::shared_ptr<DenseLinear> m_a;
    std::shared_ptr<DenseLinear> m_b;
    std::int64_t m_rank;
    double m_scaling;
    double m_dropout;
    std::optional<at::Generator> m_generator;
    bool m_enabled = true;
};

// Filled from the run config (or an adapter_config.json); the defaults are the
// run config's, so a spec made in code trains as the same config would.
struct LoraSpec {
    std::int64_t rank = common::kLoraRankDefault;
    double alpha = common::kLoraAlphaDefault;
    double dropout = common::kLoraDropoutDefault;
    bool rsLora = false; // scaling alpha / sqrt(r) (rsLoRA, Kalajdzievski 2023)
    std::vector<std::string> targetModules; // q_proj ... down_proj
    // peft's target_modules given as one regular expression instead (an
    // adapter_config.json's string, matched in full against each module's
    // name in the model the adapter was made for); attachLora turns it into
    // targetModules, the same names in every layer.
    std::string targetPattern;
    // Expert weights by transformers' names, as peft's target_parameters
    // ("mlp.experts.gate_up_proj", "mlp.experts.down_proj"): expert_lora.h.
    std::vector<std::string> targetParameters;

    double scaling() const;
};

// The targets that select only experts in a mixture of experts (its MLP
// names), which LoRA does not adapt; empty for a dense model.
std::vector<std::string> expertOnlyTargets(const LlamaConfig& config, const LoraSpec& spec);

// The projection names `spec` adapts in `model`: its targetModules, or the
// names its targetPattern selects (in every layer, else refused).
common::Result<std::vector<std::string>> targetModuleNames(
    LlamaForCausalLm& model, const LoraSpec& spec);

// Wraps every projection whose last name is in spec.targetModules in a
// LoraLinear, in the model's dtype. A is drawn as PEFT's default
// initialisation does (kaiming_uniform_ with a = sqrt(5): uniform in
// +-1/sqrt(in_features)) from a generator seeded by `seed`, in model order;
// B is zero, so the model's output is unchanged. Then the experts' weights
// that spec.targetParameters names get ExpertLoraFactors (attachExpertLora)
// from the same generator. Returns the wrapped names
// ("model.layers.0.self_attn.q_proj", "model.layers.0.mlp.experts.down_proj");
// an unknown target name is an Error.
common::Result<std::vector<std::string>> attachLora(LlamaForCausalLm& model, const LoraSpec& spec,
    std::uint64_t seed, std::optional<at::Generator> dropoutGenerator = std::nullopt);

// The LoRA layers of a model, by qualified name, in model order.
std::vector<std::pair<std::string, std::shared_ptr<LoraLinear>>> loraLayers(
    LlamaForCausalLm& model);

// Freezes every parameter except the LoRA matrices (the experts' too).
void freezeAllButLora(LlamaForCausalLm& model);

} // namespace tb::train
