#include "train/flat_parameters.h"

#include <cmath>

namespace tb::train {

FlatParameters::FlatParameters(std::vector<TrainableParameter> parameters,
    torch::ScalarType masterType, const std::vector<torch::Tensor>& initialMaster)
{
    TORCH_CHECK(!parameters.empty(), "no trainable parameter");
    TORCH_CHECK(initialMaster.empty() || initialMaster.size() == parameters.size(),
        "initial master values must match the parameters one to one");
    // Stable partition: decayed first, each group in model order.
    std::vector<size_t> order;
    for (int pass = 0; pass < 2; ++pass) {
        for (size_t i = 0; i < parameters.size(); ++i) {
            if (parameters[i].decay == (pass == 0))
                order.push_back(i);
        }
    }
    const torch::Tensor& first = parameters.front().tensor;
    const torch::ScalarType modelType = first.scalar_type();
    const torch::Device device = first.device();
    for (const size_t i : order) {
        const TrainableParameter& parameter = parameters[i];
        TORCH_CHECK(parameter.tensor.scalar_type() == modelType,
            "trainable parameters must share one dtype: ", parameter.name);
        Segment slot{parameter.name, m_numel, parameter.tensor.sizes().vec(),
            parameter.tensor.numel(), parameter.decay};
        m_numel += slot.numel;
        if (parameter.decay)
            m_decayCount += slot.numel;
        m_segments.push_back(std::move(slot));
    }

    torch::NoGradGuard noGrad;
    const auto modelOptions = torch::TensorOptions().dtype(modelType).device(device);
    m_separate = masterType != modelType;
    m_modelValues = torch::empty({m_numel}, modelOptions);
    m_modelGradients = torch::zeros({m_numel}, modelOptions);
    if (m_separate) {
        m_master = torch::empty({m_numel}, modelOptions.dtype(masterType));
        m_masterGradients = torch::zeros({m_numel}, modelOptions.dtype(masterType));
    } else {
        m_master = m_modelValues;
        m_masterGradients = m_modelGradients;
    }
    for (size_t k = 0; k < order.size(); ++k) {
        TrainableParameter& parameter = parameters[order[k]];
        const Segment& slot = m_segments[k];
        const torch::Tensor start =
            initialMaster.empty() ? parameter.tensor : initialMaster[order[k]];
        TORCH_CHECK(start.numel() == slot.numel, "initial value of ", slot.name, " has ",
            start.numel(), " elements, expected ", slot.numel);
        m_master.narrow(0, slot.offset, slot.numel).copy_(start.reshape({-1}));
        torch::Tensor values = m_modelValues.narrow(0, slot.offset, slot.numel).view(slot.shape);
        if (m_separate)
            values.copy_(m_master.narrow(0, slot.offset, slot.numel).view(slot.shape));
        parameter.tensor.set_data(values);
        parameter.tensor.mutable_grad() =
            m_modelGradients.narrow(0, slot.offset, slot.numel).view(slot.shape);
    }
    m_parameters = std::move(parameters);
}

torch::Tensor FlatParameters::masterView(const Segment& slot) const
{
    return m_master.narrow(0, slot.offset, slot.numel).view(slot.shape);
}

void FlatParameters::accumulateGradients()
{
    if (!m_separate)
        return;
    torch::NoGradGuard noGrad;
    m_masterGradients.add_(m_modelGradients);
    m_modelGradients.zero_();
}

void FlatParameters::zeroGradients()
{
    torch::NoGradGuard noGrad;
    m_modelGradients.zero_();
    if (m_separate)
        m_masterGradients.zero_();
}

double FlatParameters::clipGradientNorm(double maxNorm)
{
    torch::NoGradGuard noGrad;
    // The norm in at least fp32 even for a bf16 gradient.
    const bool narrow = m_masterGradients.scalar_type() == torch::kBFloat16
        || m_masterGradients.scalar_type() == torch::kHalf;
    const double norm =
        (narrow ? m_masterGradients.to(torch::kFloat) : m_masterGradients).norm().item<double>();
    if (maxNorm > 0 && std::isfinite(norm)) {
        const double coefficient = maxNorm / (norm + 1e-6);
        if (coefficient < 1.0)
            m_masterGradients.mul_(coefficient);
    }
    return norm;
}

void FlatParameters::copyMasterToModel()
{
    if (!m_separate)
        return;
    torch::NoGradGuard noGrad;
    m_modelValues.copy_(m_master);
}

} // namespace tb::train
