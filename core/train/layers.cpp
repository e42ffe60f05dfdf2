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

RmsNorm::RmsNorm(std::int64_t size, double eps, const torch::TensorOptions& options, Weight kind)
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

GatedMlp::GatedMlp(const GatedMlpShape& shape, const torch::TensorOptions& options)
    : m_activation(shape.activation)
    , m_mixtralNames(shape.mixtralNames)
{
    const auto linear = [&](std::int64_t in, std::int64_t out) {
        return std::make_shared<DenseLinear>(in, out, shape.withBias, options);
    };
    const std::int64_t h = shape.hiddenSize, f = shape.intermediateSize;
    if (shape.fusedGateUp) {
        m_gateUp = register_module("gate_up_proj", linear(h, 2 * f));
    } else {
        m_gate = register_module(m_mixtralNames ? "w1" : "gate_proj", linear(h, f));
        m_up = register_module(m_mixtralNames ? "w3" : "up_proj", linear(h, f));
    }
    m_down = register_module(m_mixtralNames ? "w2" : "down_proj", linear(f, h));
}

torch::Tensor GatedMlp::forward(const torch::Tensor& input)
{
    return forward(input, {}, {});
}

torch::Tensor GatedMlp::forward(const torch::Tensor& input, const ProjectionUpdate& gateUpUpdate,
    const ProjectionUpdate& downUpdate)
{
    torch::Tensor gate, up;
    if (m_gateUp) {
        const torch::Tensor both = m_gateUp->forward(input);
        const std::int64_t f = both.size(-1) / 2;
        gate = both.narrow(-1, 0, f);
        up = both.narrow(-1, f, f);
    } else {
        gate = m_gate->forward(input);
        up = m_up->forward(input);
    }
    if (gateUpUpdate) {
        const torch::Tensor both = gateUpUpdate(input);
        const std::int64_t f = both.size(-1) / 2;
        gate = gate + both.narrow(-1, 0, f);
        up = up + both.narrow(-1, f, f);
    }
    const torch::Tensor activated =
        m_activation == GateActivation::Silu ? torch::silu(gate) : at::gelu(gate, "tanh");
    const torch::Tensor hidden = activated * up;
    const torch::Tensor out = m_down->forward(hidden);
    return downUpdate ? out + downUpdate(hidden) : out;
}

std::vector<std::string> GatedMlp::projectionNames() const
{
    if (m_gateUp)
        return {"gate_up_proj", "down_proj"};
    if (m_mixtralNames)
        return {"w1", "w3", "w2"};
    return {"gate_proj", "up_proj", "down_proj"};
}

std::shared_ptr<LinearLayer>* GatedMlp::slot(const std::string& name)
{
    const std::vector<std::string> names = projectionNames();
    std::vector<std::shared_ptr<LinearLayer>*> slots{&m_gateUp, &m_down};
    if (!m_gateUp)
        slots = {&m_gate, &m_up, &m_down};
    std::shared_ptr<LinearLayer>* found = nullptr;
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name)
            found = slots[i];
    return found && *found ? found : nullptr;
}

std::shared_ptr<LinearLayer> GatedMlp::projection(const std::string& name)
{
    std::shared_ptr<LinearLayer>* found = slot(name);
    return found ? *found : nullptr;
}

void GatedMlp::replaceProjection(const std::string& name, std::shared_ptr<LinearLayer> layer)
{
    std::shared_ptr<LinearLayer>* target = slot(name);
    TORCH_CHECK(target, "GatedMlp has no projection '", name, "'");
    *target = replace_module(name, std::move(layer));
}

} // namespace tb::train
