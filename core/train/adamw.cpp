#include "train/adamw.h"

#include <algorithm>
#include <cmath>

namespace tb::train {

FlatAdamW::FlatAdamW(FlatParameters& parameters, AdamWSettings settings)
    : m_parameters(parameters)
    , m_settings(settings)
{
    for (const FlatParameters::Unit& unit : parameters.units()) {
        m_expAvg.push_back(torch::zeros_like(unit.master));
        m_expAvgSq.push_back(torch::zeros_like(unit.master));
    }
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
    auto& units = m_parameters.units();
    for (size_t u = 0; u < units.size(); ++u) {
        torch::Tensor& values = units[u].master;
        const torch::Tensor& gradients = units[u].masterGradients;
        const std::int64_t total = values.numel();
        const std::int64_t decayed = units[u].shardDecayRange().second;
        // Element-wise, so chunks give the same bits as one pass; they bound
        // the temporary (the denominator) to kChunk elements instead of a
        // third copy of the weights.
        constexpr std::int64_t kChunk = std::int64_t(1) << 22;
        for (std::int64_t begin = 0; begin < total; begin += kChunk) {
            const std::int64_t count = std::min(kChunk, total - begin);
            torch::Tensor p = values.narrow(0, begin, count);
            const torch::Tensor g = gradients.narrow(0, begin, count);
            torch::Tensor m = m_expAvg[u].narrow(0, begin, count);
            torch::Tensor v = m_expAvgSq[u].narrow(0, begin, count);
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
}

std::int64_t FlatAdamW::residentBytes() const
{
    std::int64_t bytes = 0;
    for (size_t u = 0; u < m_expAvg.size(); ++u)
        bytes += static_cast<std::int64_t>(m_expAvg[u].nbytes() + m_expAvgSq[u].nbytes());
    return bytes;
}

} // namespace tb::train
