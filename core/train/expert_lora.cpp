#include "train/expert_lora.h"

#include "common/text.h"
#include "train/llama_model.h"
#include "train/lora.h"

#include <algorithm>
#include <cmath>

namespace tb::train {

namespace {

constexpr const char* kHolder = ".expert_lora.";
constexpr ExpertWeight kExpertWeights[] = {ExpertWeight::GateUp, ExpertWeight::Down};

// transformers' name of a layer's fused expert weight, which peft's
// target_parameters match: Mixtral's block_sparse_moe is "mlp" there too.
std::string transformersName(size_t layer, ExpertWeight weight)
{
    return "model.layers." + std::to_string(layer) + ".mlp.experts." + expertWeightName(weight);
}

bool targetSelects(const std::string& target, const std::string& name)
{
    return name == target || name.ends_with("." + target);
}

common::Status checkExpertTargets(const LlamaForCausalLm& model, const LoraSpec& spec)
{
    const LlamaConfig& config = model.config();
    if (!config.isMixtureOfExperts())
        return common::Error{"lora.target_parameters: a " + config.modelType
                + " model has no experts to adapt (got " + spec.targetParameters.front() + ")",
            "target_parameters adapts the experts of mixtral and qwen3_moe models; "
            "lora.target_modules names the linear layers"};
    if (spec.dropout > 0)
        return common::Error{"lora.dropout: got " + common::shortestNumber(spec.dropout)
                + ", expected 0 with lora.target_parameters",
            "peft 0.21 cannot drop out the inputs of LoRA on the experts' weights and refuses "
            "such an adapter; set lora.dropout: 0"};
    for (const std::string& target : spec.targetParameters) {
        bool found = false;
        for (std::int64_t layer = 0; layer < config.numLayers && !found; ++layer)
            for (const ExpertWeight weight : kExpertWeights)
                found = found || targetSelects(target, transformersName(size_t(layer), weight));
        if (!found)
            return common::Error{"lora.target_parameters: \"" + target
                    + "\" selects no weight of this " + config.modelType + " model",
                "its experts' weights are mlp.experts.gate_up_proj and mlp.experts.down_proj "
                "in each layer (model.layers.N.mlp.experts.*, as peft's target_parameters "
                "name them)"};
    }
    return common::Ok{};
}

std::shared_ptr<ExpertLoraFactors> newFactors(const SparseMoe& moe, ExpertWeight weight,
    const LoraSpec& spec, const torch::TensorOptions& options, at::Generator& generator)
{
    const std::int64_t hidden = moe.expertShape().hiddenSize;
    const std::int64_t intermediate = moe.expertShape().intermediateSize;
    const bool gateUp = weight == ExpertWeight::GateUp;
    const std::int64_t in = gateUp ? hidden : intermediate;
    const std::int64_t out = gateUp ? 2 * intermediate : hidden;
    auto factors = std::make_shared<ExpertLoraFactors>(
        moe.expertCount(), spec.rank, in, out, spec.scaling(), options);
    // kaiming_uniform_(a = sqrt(5)) over lora_A's fan-in, as peft draws it.
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    torch::Tensor a = torch::empty(factors->loraA().sizes(), torch::kDouble);
    a.uniform_(-bound, bound, generator);
    factors->loraA().copy_(a);
    factors->loraB().zero_();
    return factors;
}

} // namespace

const char* expertWeightName(ExpertWeight weight)
{
    return weight == ExpertWeight::GateUp ? "gate_up_proj" : "down_proj";
}

ExpertLoraFactors::ExpertLoraFactors(std::int64_t experts, std::int64_t rank,
    std::int64_t inFeatures, std::int64_t outFeatures, double scaling,
    const torch::TensorOptions& options)
    : m_experts(experts)
    , m_scaling(scaling)
{
    m_a = register_module(
        "lora_A", std::make_shared<DenseLinear>(inFeatures, rank * experts, false, options));
    m_b = register_module(
        "lora_B", std::make_shared<DenseLinear>(rank * experts, outFeatures, false, options));
}

torch::Tensor ExpertLoraFactors::update(std::int64_t expert, const torch::Tensor& input)
{
    const torch::Tensor low = at::linear(input, expertLoraA(loraA(), m_experts, expert));
    return at::linear(low, expertLoraB(loraB(), m_experts, expert)) * m_scaling;
}

torch::Tensor expertLoraA(const torch::Tensor& a, std::int64_t experts, std::int64_t expert)
{
    const std::int64_t rank = a.size(0) / experts;
    return a.narrow(0, expert * rank, rank);
}

torch::Tensor expertLoraB(const torch::Tensor& b, std::int64_t experts, std::int64_t expert)
{
    return b.view({b.size(0), -1, experts}).select(2, expert);
}

torch::Tensor expertLoraDelta(const torch::Tensor& a, const torch::Tensor& b, std::int64_t experts,
    std::int64_t expert, double scaling, torch::ScalarType dtype)
{
    return torch::matmul(
               expertLoraB(b, experts, expert).to(dtype), expertLoraA(a, experts, expert).to(dtype))
        * scaling;
}

common::Result<std::vector<std::string>> attachExpertLora(
    LlamaForCausalLm& model, const LoraSpec& spec, at::Generator& generator)
{
    std::vector<std::string> adapted;
    if (spec.targetParameters.empty())
        return adapted;
    if (auto status = checkExpertTargets(model, spec); !status)
        return status.error();
    torch::NoGradGuard noGrad;
    const auto options =
        torch::TensorOptions().dtype(model.dtype()).device(model.outputWeight().device());
    auto& layers = model.model().layers();
    for (size_t i = 0; i < layers.size(); ++i) {
        SparseMoe* moe = layers[i]->experts();
        for (const ExpertWeight weight : kExpertWeights) {
            const std::string name = transformersName(i, weight);
            const bool selected =
                std::any_of(spec.targetParameters.begin(), spec.targetParameters.end(),
                    [&](const std::string& target) { return targetSelects(target, name); });
            if (!selected || !moe)
                continue;
            moe->attachLora(weight, newFactors(*moe, weight, spec, options, generator));
            adapted.push_back(name);
        }
    }
    return adapted;
}

bool isExpertLoraParameter(const std::string& name)
{
    return name.find(kHolder) != std::string::npos;
}

std::string peftParameterName(LlamaForCausalLm& model, const std::string& name)
{
    const size_t holder = name.find(kHolder);
    const std::string layerPrefix = "model.layers.";
    if (holder == std::string::npos || !name.starts_with(layerPrefix))
        return name;
    const size_t indexEnd = name.find('.', layerPrefix.size());
    const size_t layer = std::stoul(name.substr(layerPrefix.size(), indexEnd - layerPrefix.size()));
    const std::string rest = name.substr(holder + std::string(kHolder).size());
    const std::string weightName = rest.substr(0, rest.find('.'));
    const std::string matrix = rest.substr(weightName.size() + 1); // lora_A.weight
    TORCH_CHECK(layer < model.model().layers().size() && model.model().layers()[layer]->experts(),
        "not an expert LoRA matrix: ", name);
    const SparseMoe& moe = *model.model().layers()[layer]->experts();
    // peft wraps gate_up_proj first, then down_proj around it.
    const bool nested = weightName == expertWeightName(ExpertWeight::GateUp)
        && moe.lora(ExpertWeight::Down) != nullptr;
    return name.substr(0, indexEnd) + ".mlp.experts." + (nested ? "base_layer." : "") + matrix;
}

} // namespace tb::train
