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

} // namespace tb::train
