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
// on a handful of flat tensors. Decay only touches the decayed prefix of the
// buffer. Moments are kept in the master precision.
class FlatAdamW {
public:
    FlatAdamW(FlatParameters& parameters, AdamWSettings settings);

    // One update of the master weights from the master gradient.
    void step(double learningRate);

    std::int64_t stepCount() const { return m_step; }
    torch::Tensor& firstMoment() { return m_expAvg; }
    torch::Tensor& secondMoment() { return m_expAvgSq; }
    // Restores a saved state (moments copied in, same size as the buffer).
    void restore(
        std::int64_t stepCount, const torch::Tensor& expAvg, const torch::Tensor& expAvgSq);
    const AdamWSettings& settings() const { return m_settings; }

private:
    FlatParameters& m_parameters;
    AdamWSettings m_settings;
    std::int64_t m_step = 0;
    torch::Tensor m_expAvg;
    torch::Tensor m_expAvgSq;
};

} // namespace tb::train
