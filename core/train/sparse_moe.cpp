#include "train/sparse_moe.h"

#include "train/host_read.h"

namespace tb::train {

SparseMoe::SparseMoe(const GatedMlpShape& expertShape, const ExpertRouting& routing,
    const torch::TensorOptions& options)
    : m_expertShape(expertShape)
    , m_routing(routing)
{
    m_router = register_module("gate",
        std::make_shared<DenseLinear>(expertShape.hiddenSize, routing.experts, false, options));
    torch::nn::ModuleList list;
    for (std::int64_t i = 0; i < routing.experts; ++i) {
        m_experts.push_back(std::make_shared<GatedMlp>(expertShape, options));
        list->push_back(m_experts.back());
    }
    register_module("experts", list);
}

SparseMoe::Routes SparseMoe::route(const torch::Tensor& rows)
{
    const torch::Tensor logits = m_router->forward(rows);
    const torch::Tensor probabilities = torch::softmax(logits.to(torch::kFloat), -1);
    auto [weights, chosen] = probabilities.topk(m_routing.perToken, -1);
    if (m_routing.renormalize)
        weights = weights / weights.sum(-1, true);
    if (!m_routing.fp32Weights)
        weights = weights.to(logits.scalar_type());
    return {logits, weights.reshape({-1, 1}), chosen.reshape(-1)};
}

torch::Tensor SparseMoe::forward(const torch::Tensor& input)
{
    const torch::Tensor rows = input.reshape({-1, input.size(-1)});
    const Routes routes = route(rows);
    // Each expert runs once on the rows routed to it: the (row, slot) pairs
    // sorted by expert, and how many each expert takes.
    const torch::Tensor order = routes.experts.argsort(/*stable=*/true);
    // The loop below needs each expert's row count on the host: one read a
    // layer (transformers' grouped_mm path avoids it with a kernel of its own).
    // scatter_add, not bincount: a GPU's bincount reads the largest index back.
    m_lastRouted =
        readCountsToHost(torch::zeros({m_routing.experts}, routes.experts.options())
                             .scatter_add_(0, routes.experts, torch::ones_like(routes.experts)));
    const std::vector<std::int64_t>& taken = m_lastRouted;
    // Summed in the weights' dtype and cast once, as transformers' default
    // (grouped_mm) experts do: fp32 for Mixtral, whose weights stay fp32.
    const auto sumType = torch::promote_types(rows.scalar_type(), routes.weights.scalar_type());
    torch::Tensor output = torch::zeros(rows.sizes(), rows.options().dtype(sumType));
    std::int64_t first = 0;
    for (std::int64_t e = 0; e < m_routing.experts; ++e) {
        if (taken[e] == 0)
            continue;
        const torch::Tensor slots = order.narrow(0, first, taken[e]);
        first += taken[e];
        const torch::Tensor tokens = slots.div(m_routing.perToken, "floor");
        const torch::Tensor expertOut = expertForward(e, rows.index_select(0, tokens));
        output = output.index_add(0, tokens, expertOut * routes.weights.index_select(0, slots));
    }
    output = output.to(rows.scalar_type()).reshape(input.sizes());
    return m_balance && is_training() ? m_balance->record(m_layer, routes.logits, output) : output;
}

torch::Tensor SparseMoe::expertForward(std::int64_t expert, const torch::Tensor& rows)
{
    GatedMlp& mlp = *m_experts[size_t(expert)];
    if (!m_gateUpLora && !m_downLora)
        return mlp.forward(rows);
    const auto updateOf = [expert](const std::shared_ptr<ExpertLoraFactors>& factors) {
        return factors ? GatedMlp::ProjectionUpdate(
                   [expert, factors](const torch::Tensor& x) { return factors->update(expert, x); })
                       : GatedMlp::ProjectionUpdate();
    };
    return mlp.forward(rows, updateOf(m_gateUpLora), updateOf(m_downLora));
}

void SparseMoe::attachLora(ExpertWeight weight, std::shared_ptr<ExpertLoraFactors> factors)
{
    std::shared_ptr<ExpertLoraFactors>& slot =
        weight == ExpertWeight::GateUp ? m_gateUpLora : m_downLora;
    TORCH_CHECK(!slot, "the experts' ", expertWeightName(weight), " already have LoRA");
    if (!m_loraHolder)
        m_loraHolder = register_module("expert_lora", std::make_shared<torch::nn::Module>());
    slot = m_loraHolder->register_module(expertWeightName(weight), std::move(factors));
}

ExpertLoraFactors* SparseMoe::lora(ExpertWeight weight) const
{
    return (weight == ExpertWeight::GateUp ? m_gateUpLora : m_downLora).get();
}

std::vector<std::string> SparseMoe::projectionNames() const
{
    std::vector<std::string> names;
    for (size_t e = 0; e < m_experts.size(); ++e)
        for (const std::string& name : m_experts[e]->projectionNames())
            names.push_back("experts." + std::to_string(e) + "." + name);
    return names;
}

GatedMlp& SparseMoe::expertNamed(const std::string& name, std::string& projection)
{
    const std::string prefix = "experts.";
    const size_t end = name.find('.', prefix.size());
    TORCH_CHECK(
        name.starts_with(prefix) && end != std::string::npos, "not an expert projection: ", name);
    size_t index = m_experts.size();
    try {
        index = std::stoul(name.substr(prefix.size(), end - prefix.size()));
    } catch (const std::exception&) {
    }
    TORCH_CHECK(index < m_experts.size(), "no expert in ", name);
    projection = name.substr(end + 1);
    return *m_experts[index];
}

std::shared_ptr<LinearLayer> SparseMoe::projection(const std::string& name)
{
    std::string projectionName;
    return expertNamed(name, projectionName).projection(projectionName);
}

void SparseMoe::replaceProjection(const std::string& name, std::shared_ptr<LinearLayer> layer)
{
    std::string projectionName;
    expertNamed(name, projectionName).replaceProjection(projectionName, std::move(layer));
}

} // namespace tb::train
