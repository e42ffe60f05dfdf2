#include "train/adamw.h"

#include <algorithm>
#include <array>

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
    // LibTorch's fused kernel (CPU and CUDA) does the whole update in one
    // pass per tensor, with no temporary. It takes one weight decay per
    // call: the decayed prefixes go in one call, the rest in another.
    std::array<std::vector<torch::Tensor>, 2> values, gradients, expAvg, expAvgSq, steps;
    auto& units = m_parameters.units();
    for (size_t u = 0; u < units.size(); ++u) {
        const std::int64_t total = units[u].master.numel();
        const std::int64_t decayed = std::min(total, units[u].shardDecayRange().second);
        const std::array<std::pair<std::int64_t, std::int64_t>, 2> parts{
            {{0, decayed}, {decayed, total - decayed}}};
        for (size_t part = 0; part < parts.size(); ++part) {
            const auto [begin, count] = parts[part];
            if (count <= 0)
                continue;
            values[part].push_back(units[u].master.narrow(0, begin, count));
            gradients[part].push_back(units[u].masterGradients.narrow(0, begin, count));
            expAvg[part].push_back(m_expAvg[u].narrow(0, begin, count));
            expAvgSq[part].push_back(m_expAvgSq[u].narrow(0, begin, count));
            steps[part].push_back(torch::full({}, static_cast<double>(m_step),
                torch::TensorOptions().dtype(torch::kFloat).device(units[u].master.device())));
        }
    }
    const AdamWSettings& s = m_settings;
    const std::array<double, 2> decay{s.weightDecay, 0.0};
    for (size_t part = 0; part < values.size(); ++part) {
        if (values[part].empty())
            continue;
        at::_fused_adamw_(values[part], gradients[part], expAvg[part], expAvgSq[part], {},
            steps[part], learningRate, s.beta1, s.beta2, decay[part], s.epsilon,
            /*amsgrad=*/false, /*maximize=*/false);
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
