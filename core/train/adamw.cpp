#include "train/adamw.h"

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
    torch::Tensor& values = m_parameters.master();
    const torch::Tensor& gradients = m_parameters.masterGradients();
    const AdamWSettings& s = m_settings;
    if (s.weightDecay > 0 && m_parameters.decayCount() > 0)
        values.narrow(0, 0, m_parameters.decayCount()).mul_(1.0 - learningRate * s.weightDecay);
    m_expAvg.lerp_(gradients, 1.0 - s.beta1);
    m_expAvgSq.mul_(s.beta2).addcmul_(gradients, gradients, 1.0 - s.beta2);
    const auto step = static_cast<double>(m_step);
    const double biasCorrection1 = 1.0 - std::pow(s.beta1, step);
    const double biasCorrection2 = 1.0 - std::pow(s.beta2, step);
    const double stepSize = learningRate / biasCorrection1;
    const torch::Tensor denominator =
        (m_expAvgSq.sqrt() / std::sqrt(biasCorrection2)).add_(s.epsilon);
    values.addcdiv_(m_expAvg, denominator, -stepSize);
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
