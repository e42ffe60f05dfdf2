#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace tb::train {

// Every figure the trainer reads back from its tensors goes through here. On
// a GPU a read waits until the device has finished all the work queued
// before it, leaving the GPU idle while the host catches up; so a step reads
// its figures once, together, and the count of reads makes that testable.

// Scalars (any dtype, any device) in one transfer.
std::vector<double> readToHost(const std::vector<torch::Tensor>& scalars);
double readToHost(const torch::Tensor& scalar);
// A 1-D integer tensor, in one transfer.
std::vector<std::int64_t> readCountsToHost(const torch::Tensor& counts);
// Reads made so far by this process.
std::uint64_t hostReads();

} // namespace tb::train
