#pragma once

#include "config/run_config.h"

#include <torch/torch.h>

// DPO's loss on a batch of preference pairs, from each sequence's summed
// completion log-probabilities under the policy (trained) and the reference
// (frozen) model, as TRL's DPOTrainer (1.16) computes its sigmoid, ipo and
// robust losses (docs/TRAINING.md, "DPO").
namespace tb::train {

struct DpoLossSettings {
    config::DpoLossType type = config::DpoLossType::Sigmoid;
    double beta = 0.1;
    double labelSmoothing = 0.0;

    static DpoLossSettings fromConfig(const config::DpoConfig& dpo)
    {
        return {dpo.lossType, dpo.beta, dpo.labelSmoothing};
    }
};

// Per pair [pairs]: log pi(completion | prompt), summed over the
// completion's tokens, of the chosen and of the rejected sequence.
struct PairLogProbs {
    torch::Tensor chosen;
    torch::Tensor rejected;
};

// The completion tokens of each sequence [pairs] (IPO averages over them).
struct PairTokens {
    torch::Tensor chosen;
    torch::Tensor rejected;
};

// The loss of each pair [pairs], with h = (policy.chosen - reference.chosen)
// - (policy.rejected - reference.rejected), the difference of the two
// implicit rewards over beta:
// - sigmoid: -(1 - e) log sigmoid(beta h) - e log sigmoid(-beta h); e = 0 is
//   DPO (Rafailov et al. 2023, arXiv 2305.18290, eq. 7), e > 0 conservative
//   DPO (Mitchell 2023, "A note on DPO with noisy preferences"), TRL's
//   sigmoid loss with label_smoothing before 1.0;
// - robust: (-(1 - e) log sigmoid(beta h) + e log sigmoid(-beta h)) /
//   (1 - 2e), the unbiased loss under flipped labels (Chowdhury et al. 2024,
//   arXiv 2403.00409, eq. 8);
// - ipo: (h' - 1 / (2 beta))^2 (Azar et al. 2023, arXiv 2310.12036, eq. 17)
//   where h' takes each log-ratio per completion token, as TRL does (the
//   normalisation its authors confirmed to TRL).
torch::Tensor dpoPairLoss(const PairLogProbs& policy, const PairLogProbs& reference,
    const PairTokens& tokens, const DpoLossSettings& settings);

// The implicit rewards beta (log pi - log pi_ref) of each sequence [pairs].
PairLogProbs dpoRewards(const PairLogProbs& policy, const PairLogProbs& reference, double beta);

} // namespace tb::train
