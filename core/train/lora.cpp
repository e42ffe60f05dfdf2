#include "train/lora.h"

#include "model/multimodal_language_model.h"
#include "tokenizer/full_match.h"
#include "train/expert_lora.h"
#include "train/llama_model.h"
#include "train/nf4.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace tb::train {

namespace {

torch::ScalarType mergeType(torch::ScalarType modelType)
{
    return modelType == torch::kDouble ? torch::kDouble : torch::kFloat;
}

std::string lastName(const std::string& qualified)
{
    return qualified.substr(qualified.rfind('.') + 1);
}

} // namespace

LoraLinear::LoraLinear(std::shared_ptr<LinearLayer> base, std::int64_t rank, double scaling,
    double dropout, std::optional<at::Generator> dropoutGenerator,
    const torch::TensorOptions& options)
    : m_rank(rank)
    , m_scaling(scaling)
    , m_dropout(dropout)
    , m_generator(std::move(dropoutGenerator))
{
    m_base = register_module("base_layer", std::move(base));
    m_a = register_module(
        "lora_A", std::make_shared<DenseLinear>(m_base->inFeatures(), rank, false, options));
    m_b = register_module(
        "lora_B", std::make_shared<DenseLinear>(rank, m_base->outFeatures(), false, options));
}

torch::Tensor LoraLinear::forward(const torch::Tensor& input)
{
    if (!m_enabled)
        return m_base->forward(input);
    torch::Tensor x = input;
    if (m_dropout > 0 && is_training()) {
        torch::Tensor keep = torch::empty_like(input);
        if (m_generator)
            keep.bernoulli_(1.0 - m_dropout, *m_generator);
        else
            keep.bernoulli_(1.0 - m_dropout);
        x = input * keep / (1.0 - m_dropout);
    }
    return m_base->forward(input) + m_b->forward(m_a->forward(x)) * m_scaling;
}

torch::Tensor LoraLinear::baseWeight(torch::ScalarType dtype)
{
    torch::NoGradGuard noGrad;
    if (auto dense = std::dynamic_pointer_cast<DenseLinear>(m_base))
        return dense->weight().detach().to(dtype);
    const auto nf4 = std::dynamic_pointer_cast<Nf4Linear>(m_base);
    TORCH_CHECK(nf4, "LoRA over an unknown kind of linear layer");
    return dequantizeNf4(nf4->weight(), dtype);
}

torch::Tensor LoraLinear::baseBias()
{
    if (auto dense = std::dynamic_pointer_cast<DenseLinear>(m_base))
        return dense->bias();
    if (auto nf4 = std::dynamic_pointer_cast<Nf4Linear>(m_base))
        return nf4->bias();
    return {};
}

torch::Tensor LoraLinear::mergedWeight()
{
    torch::NoGradGuard noGrad;
    const auto type = mergeType(loraA().scalar_type());
    return baseWeight(type) + torch::matmul(loraB().to(type), loraA().to(type)) * m_scaling;
}

double LoraSpec::scaling() const
{
    return rsLora ? alpha / std::sqrt(static_cast<double>(rank))
                  : alpha / static_cast<double>(rank);
}

std::vector<std::string> expertOnlyTargets(const LlamaConfig& config, const LoraSpec& spec)
{
    std::vector<std::string> names;
    if (!config.isMixtureOfExperts())
        return names;
    for (const std::string& target : spec.targetModules) {
        const auto kind = model::linearKindNamed(target);
        if (kind && !model::isAttentionLinear(*kind))
            names.push_back(target);
    }
    return names;
}

namespace {

// What a block of `config` offers LoRA, for refusals.
std::string adaptableModules(const LlamaConfig& config)
{
    if (config.isMixtureOfExperts())
        return "its blocks adapt q_proj, k_proj, v_proj, o_proj; its experts through "
               "lora.target_parameters (mlp.experts.gate_up_proj, mlp.experts.down_proj)";
    return config.fusedQkv ? "its block has qkv_proj, o_proj, gate_up_proj, down_proj"
                           : "its block has q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, "
                             "down_proj";
}

// Every target must select a projection; in a mixture of experts the MLP
// names select nothing (the experts are adapted through target_parameters,
// as peft does), and are refused only when nothing at all is adapted.
template <typename Selects>
common::Status checkTargetsSelect(LlamaForCausalLm& model, const LoraSpec& spec, Selects selects)
{
    const auto projections = model.projections();
    const auto selectsAny = [&](const std::string& target) {
        return std::any_of(projections.begin(), projections.end(),
            [&](const auto& item) { return selects(target, item.first); });
    };
    const std::vector<std::string> expertNames = expertOnlyTargets(model.config(), spec);
    for (const std::string& target : spec.targetModules) {
        const bool expertName =
            std::find(expertNames.begin(), expertNames.end(), target) != expertNames.end();
        if (!selectsAny(target) && !expertName)
            return common::Error{"LoRA target module '" + target + "' is not in this "
                    + model.config().modelType + " model",
                adaptableModules(model.config())};
    }
    if (spec.targetParameters.empty()
        && std::none_of(spec.targetModules.begin(), spec.targetModules.end(), selectsAny))
        return common::Error{"LoRA target modules select only the experts of this "
                + model.config().modelType
                + " model, whose weights are adapted through lora.target_parameters",
            adaptableModules(model.config())};
    return common::Ok{};
}

// The projection names `pattern` selects, by each projection's name in the
// model the adapter was made for; refused unless it selects a name in every
// layer or in none, which is what a list of names can say.
common::Result<std::vector<std::string>> targetsOfPattern(
    LlamaForCausalLm& model, const std::string& pattern)
{
    const common::Result<tokenizer::FullMatch> selects = tokenizer::FullMatch::compile(pattern);
    if (!selects)
        return common::Error{"LoRA target_modules '" + pattern
                + "' is not a regular expression Tunebench reads: " + selects.error().message,
            "use a list of module names"};
    std::map<std::string, std::pair<int, int>> countsOf; // name -> {selected, in the model}
    for (const auto& [name, layer] : model.projections()) {
        if (LlamaForCausalLm::isExpertProjection(name))
            continue;
        const std::string theirs = model::decoderModuleName(model.config(), name);
        auto& [selected, present] = countsOf[lastName(name)];
        ++present;
        selected += selects->matches(theirs) ? 1 : 0;
    }
    std::vector<std::string> targets;
    for (const auto& [name, counts] : countsOf) {
        if (counts.first == 0)
            continue;
        if (counts.first != counts.second)
            return common::Error{"LoRA target_modules '" + pattern + "' selects " + name + " in "
                    + std::to_string(counts.first) + " of " + std::to_string(counts.second)
                    + " layers",
                "Tunebench adapts a projection in every layer or in none"};
        targets.push_back(name);
    }
    if (targets.empty())
        return common::Error{"LoRA target_modules '" + pattern + "' selects no projection of this "
                + model.config().modelType + " model",
            adaptableModules(model.config())};
    return targets;
}

} // namespace

common::Result<std::vector<std::string>> targetModuleNames(
    LlamaForCausalLm& model, const LoraSpec& spec)
{
    if (spec.targetPattern.empty())
        return spec.targetModules;
    return targetsOfPattern(model, spec.targetPattern);
}

common::Result<std::vector<std::string>> attachLora(LlamaForCausalLm& model,
    const LoraSpec& requested, std::uint64_t seed, std::optional<at::Generator> dropoutGenerator)
{
    LoraSpec spec = requested;
    common::Result<std::vector<std::string>> targets = targetModuleNames(model, requested);
    if (!targets)
        return targets.error();
    spec.targetModules = std::move(targets).value();
    if (spec.rank < 1)
        return common::Error{"LoRA rank must be at least 1, got " + std::to_string(spec.rank), {}};
    if (spec.targetModules.empty() && spec.targetParameters.empty())
        return common::Error{"LoRA needs at least one target module or target parameter", {}};
    for (const std::string& name : spec.targetModules) {
        if (!model::linearKindNamed(name))
            return common::Error{
                "LoRA target module '" + name + "' is not a linear layer of a decoder block",
                "expected q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj or down_proj "
                "(Phi-3: qkv_proj, gate_up_proj)"};
    }
    // target_modules never select an expert's projection: the experts are
    // adapted as fused weights through target_parameters, as peft does.
    const auto selects = [](const std::string& target, const std::string& projection) {
        const auto kind = model::linearKindNamed(lastName(projection));
        return kind && model::targetSelects(target, *kind)
            && !LlamaForCausalLm::isExpertProjection(projection);
    };
    const auto selected = [&](const std::string& projection) {
        return std::any_of(spec.targetModules.begin(), spec.targetModules.end(),
            [&](const std::string& target) { return selects(target, projection); });
    };
    if (auto status = checkTargetsSelect(model, spec, selects); !status)
        return status.error();
    std::vector<std::string> wrapped;
    try {
        torch::NoGradGuard noGrad;
        at::Generator generator = at::detail::createCPUGenerator(seed);
        const auto options =
            torch::TensorOptions().dtype(model.dtype()).device(model.outputWeight().device());
        for (auto& [name, layer] : model.projections()) {
            if (!selected(name))
                continue;
            TORCH_CHECK(!std::dynamic_pointer_cast<LoraLinear>(layer), name, " already has LoRA");
            auto lora = std::make_shared<LoraLinear>(
                layer, spec.rank, spec.scaling(), spec.dropout, dropoutGenerator, options);
            const double bound = 1.0 / std::sqrt(static_cast<double>(layer->inFeatures()));
            torch::Tensor a = torch::empty(lora->loraA().sizes(), torch::kDouble);
            a.uniform_(-bound, bound, generator);
            lora->loraA().copy_(a);
            lora->loraB().zero_();
            model.replaceProjection(name, lora);
            wrapped.push_back(name);
        }
        auto experts = attachExpertLora(model, spec, generator);
        if (!experts)
            return experts.error();
        wrapped.insert(wrapped.end(), experts->begin(), experts->end());
    } catch (const std::exception& e) {
        return common::Error{std::string("cannot attach LoRA: ") + e.what(), {}};
    }
    return wrapped;
}

std::vector<std::pair<std::string, std::shared_ptr<LoraLinear>>> loraLayers(LlamaForCausalLm& model)
{
    std::vector<std::pair<std::string, std::shared_ptr<LoraLinear>>> out;
    for (auto& [name, layer] : model.projections()) {
        if (auto lora = std::dynamic_pointer_cast<LoraLinear>(layer))
            out.emplace_back(name, lora);
    }
    return out;
}

void freezeAllButLora(LlamaForCausalLm& model)
{
    for (auto& item : model.named_parameters()) {
        const bool lora = item.key().find(".lora_A.") != std::string::npos
            || item.key().find(".lora_B.") != std::string::npos;
        item.value().set_requires_grad(lora);
    }
}

} // namespace tb::train
