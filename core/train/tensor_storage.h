#pragma once

#include <torch/torch.h>

namespace tb::train {

// Storage that comes and goes under tensors that stay (FSDP's resharding):
// the tensor, and every view of it, keeps its StorageImpl; only the memory
// behind it is freed and allocated again, so views that autograd saved or
// that back a module's parameters remain valid once it is back.
bool holdsStorage(const torch::Tensor& tensor);
void releaseStorage(const torch::Tensor& tensor);
// Memory for the tensor's elements, uninitialised.
void allocateStorage(const torch::Tensor& tensor);
// A tensor of this shape and type whose storage is released from the start:
// what a sharded load builds the model from, so no rank ever holds it whole.
torch::Tensor tensorWithoutStorage(c10::IntArrayRef sizes, const torch::TensorOptions& options);

// While one lives on a thread, the layers built there create their weights
// without storage (newWeight), as accelerate's init_empty_weights() does
// with the meta device; the sharded load then gives each rank only its part.
class DeferredWeights {
public:
    DeferredWeights();
    ~DeferredWeights();
    DeferredWeights(const DeferredWeights&) = delete;
    DeferredWeights& operator=(const DeferredWeights&) = delete;
    static bool active();

private:
    bool m_previous;
};

// A layer's weight filled with `value`, or without storage under
// DeferredWeights.
torch::Tensor newWeight(
    c10::IntArrayRef sizes, const torch::TensorOptions& options, double value = 0.0);

} // namespace tb::train
