#include "train/dpo_loss.h"

#include <stdexcept>

namespace tb::train {

namespace {

namespace F = torch::nn::functional;

torch::Tensor logRatio(const torch::Tensor& policy, const torch::Tensor& reference)
{
    return policy - reference;
}

} // namespace

torch::Tensor dpoPairLoss(const PairLogProbs& policy, const PairLogProbs& reference,
    const PairTokens& tokens, const DpoLossSettings& settings)
{
    const double beta = settings.beta;
    const double e = settings.labelSmoothing;
    const torch::Tensor chosenRatio = logRatio(policy.chosen, reference.chosen);
    const torch::Tensor rejectedRatio = logRatio(policy.rejected, reference.rejected);
    switch (settings.type) {
    case config::DpoLossType::Sigmoid: {
        const torch::Tensor h = beta * (chosenRatio - rejectedRatio);
        return -(1.0 - e) * F::logsigmoid(h) - e * F::logsigmoid(-h);
    }
    case config::DpoLossType::Robust: {
        const torch::Tensor h = beta * (chosenRatio - rejectedRatio);
        return (-(1.0 - e) * F::logsigmoid(h) + e * F::logsigmoid(-h)) / (1.0 - 2.0 * e);
    }
    case config::DpoLossType::Ipo: {
        const torch::Tensor perToken = chosenRatio / tokens.chosen.clamp_min(1.0)
            - rejectedRatio / tokens.rejected.clamp_min(1.0);
        return (perToken - 1.0 / (2.0 * beta)).pow(2);
    }
    }
    throw std::invalid_argument("unknown DPO loss type");
}

PairLogProbs dpoRewards(const PairLogProbs& policy, const PairLogProbs& reference, double beta)
{
    return {beta * logRatio(policy.chosen, reference.chosen).detach(),
        beta * logRatio(policy.rejected, reference.rejected).detach()};
}

} // namespace tb::train
