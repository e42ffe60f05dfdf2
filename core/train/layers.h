#pragma once

#include <torch/torch.h>

#include <functional>

namespace tb::train {

// A projection y = x W^T + b with W of shape [out, in], as nn.Linear stores
// it. Every projection of the model is held through this base so that part 2
// can wrap one in place (a LoRA adapter keeps the frozen projection and adds
// its low-rank path) without the attention or MLP code knowing.
class LinearLayer : public torch::nn::Module {
public:
    virtual torch::Tensor forward(const torch::Tensor& input) = 0;
    virtual std::int64_t inFeatures() const = 0;
    virtual std::int64_t outFeatures() const = 0;
};

class DenseLinear : public LinearLayer {
public:
    DenseLinear(std::int64_t inFeatures, std::int64_t outFeatures, bool withBias,
        const torch::TensorOptions& options);

    torch::Tensor forward(const torch::Tensor& input) override;
    std::int64_t inFeatures() const override { return m_weight.size(1); }
    std::int64_t outFeatures() const override { return m_weight.size(0); }

    torch::Tensor& weight() { return m_weight; }
    torch::Tensor& bias() { return m_bias; } // undefined without bias

private:
    torch::Tensor m_weight;
    torch::Tensor m_bias;
};

// RMSNorm (Zhang & Sennrich 2019): the mean square and the scaling in at
// least fp32. Llama casts the result back before the weight; Gemma scales by
// (1 + weight) in fp32 and casts after, and stores the weight around 0.
class RmsNorm : public torch::nn::Module {
public:
    enum class Weight { Plain, OffsetByOne };
    RmsNorm(std::int64_t size, double eps, const torch::TensorOptions& options,
        Weight kind = Weight::Plain);
    torch::Tensor forward(const torch::Tensor& input);
    torch::Tensor& weight() { return m_weight; }
    // What an untrained norm stores: the weight that scales by one.
    double identityWeight() const { return m_kind == Weight::OffsetByOne ? 0.0 : 1.0; }

private:
    torch::Tensor m_weight;
    double m_eps;
    Weight m_kind;
};

class TokenEmbedding : public torch::nn::Module {
public:
    TokenEmbedding(std::int64_t vocabSize, std::int64_t size, const torch::TensorOptions& options);
    torch::Tensor forward(const torch::Tensor& ids);
    torch::Tensor& weight() { return m_weight; }

private:
    torch::Tensor m_weight;
};

// down(act(gate(x)) * up(x)) (Shazeer 2020, "GLU variants"): SwiGLU with
// silu (Llama), GeGLU with the tanh approximation of GELU (Gemma).
enum class GateActivation { Silu, GeluTanh };

struct GatedMlpShape {
    std::int64_t hiddenSize = 0;
    std::int64_t intermediateSize = 0;
    bool withBias = false;
    GateActivation activation = GateActivation::Silu;
    bool fusedGateUp = false; // Phi-3: gate and up rows in one gate_up_proj, gate first
    bool mixtralNames = false; // Mixtral's experts: w1 (gate), w3 (up), w2 (down)
};

class GatedMlp : public torch::nn::Module {
public:
    GatedMlp(const GatedMlpShape& shape, const torch::TensorOptions& options);
    torch::Tensor forward(const torch::Tensor& input);
    // A term added to a projection's output, from that projection's input.
    using ProjectionUpdate = std::function<torch::Tensor(const torch::Tensor&)>;
    // With `gateUp` added to the gate and up outputs side by side ([..., 2 x
    // intermediate], gate first, as transformers fuses an expert's rows) and
    // `down` to the down output; either may be empty. LoRA on the experts of
    // a mixture (ExpertLoraFactors) comes in this way.
    torch::Tensor forward(
        const torch::Tensor& input, const ProjectionUpdate& gateUp, const ProjectionUpdate& down);

    // "gate_proj", "up_proj", "down_proj"; Phi-3: "gate_up_proj", "down_proj";
    // Mixtral's experts: "w1", "w3", "w2".
    std::vector<std::string> projectionNames() const;
    std::shared_ptr<LinearLayer> projection(const std::string& name);
    void replaceProjection(const std::string& name, std::shared_ptr<LinearLayer> layer);

private:
    std::shared_ptr<LinearLayer>* slot(const std::string& name);

    std::shared_ptr<LinearLayer> m_gate;
    std::shared_ptr<LinearLayer> m_up;
    std::shared_ptr<LinearLayer> m_gateUp; // fused: the two above null
    std::shared_ptr<LinearLayer> m_down;
    GateActivation m_activation;
    bool m_mixtralNames;
};

} // namespace tb::train
