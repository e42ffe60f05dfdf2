#include "train/adamw.h"

#include <algorithm>
#include <cmath>

namespace tb::train {

FlatAdamW::FlatAdamW(FlatParameters& parameters, AdamWSettings settings)
    : m_parameters(parameters)
    , m_settings(settings)
{
    m_expAvg = torch::zeros_like(parameters.master());
    m_expAvgSq = torch::zeros_like(parameters.master());
}

void FlatAdamW::step(double learningRate)
{
    torch::NoGradGuard noGrad;
    ++m_step;
    const AdamWSettings& s = m_settings;
    const auto step = static_cast<double>(m_step);
    const double biasCorrection1 = 1.0 - std::pow(s.beta1, step);
    const double biasCorrection2Root = std::sqrt(1.0 - std::pow(s.beta2, step));
    const double stepSize = learningRate / biasCorrection1;
    torch::Tensor& values = m_parameters.master();
    const torch::Tensor& gradients = m_parameters.masterGradients();
    const std::int64_t total = values.numel();
    const std::int64_t decayed = m_parameters.decayCount();
    // Element-wise, so chunks give the same bits as one pass; they bound the
    // temporary (the denominator) to kChunk elements instead of a third copy
    // of the weights.
    constexpr std::int64_t kChunk = std::int64_t(1) << 22;
    for (std::int64_t begin = 0; begin < total; begin += kChunk) {
        const std::int64_t count = std::min(kChunk, total - begin);
        torch::Tensor p = values.narrow(0, begin, count);
        const torch::Tensor g = gradients.narrow(0, begin, count);
        torch::Tensor m = m_expAvg.narrow(0, begin, count);
        torch::Tensor v = m_expAvgSq.narrow(0, begin, count);
        if (s.weightDecay > 0 && begin < decayed)
            p.narrow(0, 0, std::min(count, decayed - begin))
                .mul_(1.0 - learningRate * s.weightDecay);
        m.lerp_(g, 1.0 - s.beta1);
        v.mul_(s.beta2).addcmul_(g, g, 1.0 - s.beta2);
        torch::Tensor denominator = v.sqrt();
        denominator.div_(biasCorrection2Root).add_(s.epsilon);
        p.addcdiv_(m, denominator, -stepSize);
    }
}

void FlatAdamW::restore(
    std::int64_t stepCount, const torch::Tensor& expAvg, const torch::Tensor& expAvgSq)
{
    torch::NoGradGuard noGrad;
    TORCH_CHECK(expAvg.numel() == m_expAvg.numel() && expAvgSq.numel() == m_expAvgSq.numel(),
        "optimizer state has ", expAvg.numel(), " elements, expected ", m_expAvg.numel());
    m_step = stepCount;
    m_expAvg.copy_(expAvg.reshape({-1}));
    m_expAvgSq.copy_(expAvgSq.reshape({-1}));
}

} // namespace tb::train
