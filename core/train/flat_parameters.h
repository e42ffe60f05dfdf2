#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace tb::train {

struct TrainableParameter {
    std::string name; // Hugging Face / PEFT-internal name ("model.norm.weight")
    torch::Tensor tensor; // the model's parameter
    bool decay = true; // AdamW weight decay applies (not to norms and biases)
};

// The trainable parameters of a model laid out in one flat buffer, so the
// optimizer, the gradient norm and checkpoints touch a few large tensors
// instead of hundreds of small ones (LIBTORCH.md, "Optimizer").
//
// The model's parameters become views into `modelValues`, their gradients
// views into `modelGradients`, so backward accumulates straight into the
// flat buffer. With a master type wider than the model's (bf16 compute with
// fp32 master weights), the master copy and its gradient are separate fp32
// buffers: each micro-batch's bf16 gradient is added to the fp32 one, the
// optimizer updates the fp32 master, and the model's bf16 copy is refreshed
// from it. Otherwise master and model share one buffer.
//
// Parameters that take weight decay come first: they are the elements
// [0, decayCount()) of every buffer.
class FlatParameters {
public:
    // `initialMaster`, when given, holds the exact starting value of each
    // parameter in at least the master precision (e.g. the fp32 weights a
    // bf16 model was rounded from), in the order of `parameters`.
    FlatParameters(std::vector<TrainableParameter> parameters, torch::ScalarType masterType,
        const std::vector<torch::Tensor>& initialMaster = {});

    struct Segment {
        std::string name;
        std::int64_t offset = 0;
        std::vector<std::int64_t> shape;
        std::int64_t numel = 0;
        bool decay = true;
    };
    const std::vector<Segment>& segments() const { return m_segments; }
    std::int64_t numel() const { return m_numel; }
    std::int64_t decayCount() const { return m_decayCount; }
    bool hasSeparateMaster() const { return m_separate; }

    torch::Tensor& master() { return m_master; }
    torch::Tensor& masterGradients() { return m_masterGradients; }
    torch::Tensor& modelValues() { return m_modelValues; }
    // One parameter's slice of the master buffer, shaped like the parameter.
    torch::Tensor masterView(const Segment& slot) const;

    // After each micro-batch's backward: move the model-precision gradient
    // into the master gradient (nothing to do when they are one buffer).
    void accumulateGradients();
    void zeroGradients();
    // Global L2 norm of the master gradient; scaled down to maxNorm when
    // above it (maxNorm <= 0: never), as torch.nn.utils.clip_grad_norm_.
    double clipGradientNorm(double maxNorm);
    // After the optimizer updated the master: refresh the model's copy.
    void copyMasterToModel();

private:
    std::vector<TrainableParameter> m_parameters;
    std::vector<Segment> m_segments;
    std::int64_t m_numel = 0;
    std::int64_t m_decayCount = 0;
    bool m_separate = false;
    torch::Tensor m_modelValues;
    torch::Tensor m_modelGradients;
    torch::Tensor m_master;
    torch::Tensor m_masterGradients;
};

} // namespace tb::train
