#pragma once

#include "train/flat_parameters.h"

#include <torch/torch.h>

namespace tb::train {

struct AdamWSettings {
    double beta1 = 0.9;
    double beta2 = 0.999;
    double epsilon = 1e-8;
    double weightDecay = 0.0;
};

// AdamW (Loshchilov and Hutter, arXiv:1711.05101) over FlatParameters: the
// same arithmetic as torch.optim.AdamW (decay p *= 1 - lr * wd first, then
// m, v, bias corrections, p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)),
// on a handful of flat tensors: each unit's master shard, through LibTorch's
// fused AdamW kernel. Decay only touches the decayed prefix of each unit.
// Moments are kept in the master precision, one pair per unit, the size of
// this rank's shard (ZeRO partitions them), on the master's device.
class FlatAdamW {
public:
    FlatAdamW(FlatParameters& parameters, AdamWSettings settings);

    // One update of the master weights from the master gradient.
    void step(double learningRate);

    std::int64_t stepCount() const { return m_step; }
    void setStepCount(std::int64_t step) { m_step = step; }
    // Unit u's moments, shaped like units()[u].master.
    torch::Tensor& firstMoment(size_t unit) { return m_expAvg[unit]; }
    torch::Tensor& secondMoment(size_t unit) { return m_expAvgSq[unit]; }
    const AdamWSettings& settings() const { return m_settings; }
    std::int64_t residentBytes() const;

private:
    FlatParameters& m_parameters;
    AdamWSettings m_settings;
    std::int64_t m_step = 0;
    std::vector<torch::Tensor> m_expAvg;
    std::vector<torch::Tensor> m_expAvgSq;
};

} // namespace tb::train
