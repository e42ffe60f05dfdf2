#include "train/router_balance.h"

namespace tb::train {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Identity on a layer's output; in backward, also the gradient of the
// layer's router probability sums, read from `gradient` when backward runs.
class BalanceGradient : public torch::autograd::Function<BalanceGradient> {
public:
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& output,
        const torch::Tensor& probabilitySums, const torch::Tensor& gradient)
    {
        ctx->saved_data["gradient"] = gradient;
        ctx->saved_data["dtype"] = static_cast<std::int64_t>(probabilitySums.scalar_type());
        return output;
    }

    static variable_list backward(AutogradContext* ctx, variable_list outputGradients)
    {
        const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
        return {
            outputGradients[0], ctx->saved_data["gradient"].toTensor().to(dtype), torch::Tensor()};
    }
};

} // namespace

RouterBalance::RouterBalance(std::int64_t layers, std::int64_t experts, std::int64_t perToken)
    : m_experts(experts)
    , m_perToken(perToken)
    , m_layers(static_cast<size_t>(layers))
{
}

void RouterBalance::begin(const torch::Tensor& tokenMask, double scale)
{
    std::fill(m_layers.begin(), m_layers.end(), LayerRouting{});
    m_mask = tokenMask.reshape(-1).to(torch::kFloat);
    m_scale = scale;
    // A fresh tensor each micro-batch: the nodes of the last one keep theirs.
    m_gradient = torch::zeros({m_experts}, m_mask.options());
}

torch::Tensor RouterBalance::record(
    std::int64_t layer, const torch::Tensor& routerLogits, const torch::Tensor& output)
{
    TORCH_CHECK(m_mask.defined() && routerLogits.size(0) == m_mask.size(0),
        "router balance: ", routerLogits.size(0), " routed tokens, a mask of ",
        m_mask.defined() ? m_mask.size(0) : 0);
    // transformers takes the softmax in the logits' own dtype here (the
    // routing itself takes it in fp32), and its top k from that.
    const torch::Tensor probabilities = torch::softmax(routerLogits, -1);
    const torch::Tensor chosen = std::get<1>(probabilities.topk(m_perToken, -1));
    LayerRouting& routing = m_layers.at(static_cast<size_t>(layer));
    {
        torch::NoGradGuard noGrad;
        routing.routedSlots =
            torch::zeros({m_experts}, m_mask.options())
                .scatter_add_(0, chosen.reshape(-1), m_mask.repeat_interleave(m_perToken));
    }
    const torch::Tensor sums = (probabilities.to(torch::kFloat) * m_mask.unsqueeze(-1)).sum(0);
    routing.probabilities = sums.detach();
    if (!sums.requires_grad())
        return output;
    return BalanceGradient::apply(output, sums, m_gradient);
}

torch::Tensor RouterBalance::finish()
{
    torch::NoGradGuard noGrad;
    torch::Tensor routedSlots;
    torch::Tensor probabilities;
    double layers = 0.0;
    for (const LayerRouting& routing : m_layers) {
        if (!routing.routedSlots.defined())
            continue;
        routedSlots =
            routedSlots.defined() ? routedSlots + routing.routedSlots : routing.routedSlots;
        probabilities =
            probabilities.defined() ? probabilities + routing.probabilities : routing.probabilities;
        layers += 1.0;
    }
    if (!routedSlots.defined())
        return torch::zeros({}, m_mask.options());
    const torch::Tensor rows = m_mask.sum() * layers;
    const torch::Tensor shares = routedSlots / rows;
    const double experts = static_cast<double>(m_experts);
    // d/dP_l of E sum_e (C_e / N)(P_e / N), the same for every layer.
    m_gradient.copy_(shares / rows * (experts * m_scale));
    return (shares * (probabilities / rows)).sum() * experts;
}

} // namespace tb::train
