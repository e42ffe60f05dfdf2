#include "train/layers.h"

#include "train/tensor_storage.h"

namespace tb::train {

DenseLinear::DenseLinear(std::int64_t inFeatures, std::int64_t outFeatures, bool withBias,
    const torch::TensorOptions& options)
{
    m_weight = register_parameter("weight", newWeight({outFeatures, inFeatures}, options));
    if (withBias)
        m_bias = register_parameter("bias", newWeight({outFeatures}, options));
}

torch::Tensor DenseLinear::forward(const torch::Tensor& input)
{
    // at::linear, as Python's F.linear: a biased [batch, tokens, in] input is
    // one addmm, rounded once. torch::nn::functional::linear instead adds the
    // bias after the matmul, a second rounding that in bf16 moved Qwen2's
    // logits by 2 % from transformers' (MODEL.md, "Against transformers").
    return at::linear(input, m_weight, m_bias);
}

RmsNorm::RmsNorm(
    std::int64_t size, double eps, const torch::TensorOptions& options, Weight kind)
    : m_eps(eps)
    , m_kind(kind)
{
    m_weight = register_parameter("weight", newWeight({size}, options, identityWeight()));
}

torch::Tensor RmsNorm::forward(const torch::Tensor& input)
{
    // bf16/fp16 lose too much in the mean of squares; fp64 stays fp64.
    const auto computeType = input.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    const torch::Tensor x = input.to(computeType);
    const torch::Tensor normalized = x * torch::rsqrt(x.pow(2).mean(-1, true) + m_eps);
    if (m_kind == Weight::OffsetByOne)
        return (normalized * (m_weight.to(computeType) + 1.0)).to(input.scalar_type());
    return m_weight * normalized.to(input.scalar_type());
}

TokenEmbedding::TokenEmbedding(
    std::int64_t vocabSize, std::int64_t size, const torch::TensorOptions& options)
{
    m_weight = register_parameter("weight", newWeight({vocabSize, size}, options));
}

torch::Tensor TokenEmbedding::forward(const torch::Tensor& ids)
{
    return torch::embedding(m_weight, ids);
}

GatedMlp::GatedMlp(std::int64_t hiddenSize, std::int64_t intermediateSize, bool withBias,
    GateActivation activation, const torch::TensorOptions& options)
    : m_activation(activation)
{
    m_gate = register_module("gate_proj",
        std::make_shared<DenseLinear>(hiddenSize, intermediateSize, withBias, options));
    m_up = register_module(
        "up_proj", std::make_shared<DenseLinear>(hiddenSize, intermediateSize, withBias, options));
    m_down = register_module("down_proj",
        std::make_shared<DenseLinear>(intermediateSize, hiddenSize, withBias, options));
}

torch::Tensor GatedMlp::forward(const torch::Tensor& input)
{
    const torch::Tensor gate = m_gate->forward(input);
    const torch::Tensor activated =
        m_activation == GateActivation::Silu ? torch::silu(gate) : at::gelu(gate, "tanh");
    return m_down->forward(activated * m_up->forward(input));
}

std::shared_ptr<LinearLayer> GatedMlp::projection(const std::string& name) const
{
    if (name == "gate_proj")
        return m_gate;
    if (name == "up_proj")
        return m_up;
    if (name == "down_proj")
        return m_down;
    return nullptr;
}

void GatedMlp::replaceProjection(const std::string& name, std::shared_ptr<LinearLayer> layer)
{
    std::shared_ptr<LinearLayer>* slot = name == "gate_proj" ? &m_gate
        : name == "up_proj"                                  ? &m_up
        : name == "down_proj"                                ? &m_down
                                                             : nullptr;
    TORCH_CHECK(slot, "GatedMlp has no projection '", name, "'");
    *slot = replace_module(name, std::move(layer));
}

} // namespace tb::train
