#pragma once

#include "dist/communicator.h"

#include <mutex>

// What every Communicator shares whatever carries the bytes: the ring
// accounting, argument checks, and the copies that must not bump autograd's
// version counter.
namespace tb::dist {

// Thread-safe CommunicationStats, counted with the ring formulas of
// communicator.h from the logical buffers.
class StatsCounter {
public:
    void allReduce(const torch::Tensor& tensor, int groupSize);
    void allGather(const torch::Tensor& output, int groupSize);
    void reduceScatter(const torch::Tensor& input, int groupSize);
    void broadcast(const torch::Tensor& tensor);
    void barrier();
    CommunicationStats snapshot() const;

private:
    mutable std::mutex m_mutex;
    CommunicationStats m_stats;
};

std::int64_t byteSize(const torch::Tensor& tensor);

// Throws std::invalid_argument naming the operation when the shapes or dtypes
// do not fit the contract of communicator.h.
void checkAllGatherArguments(
    const torch::Tensor& output, const torch::Tensor& input, int groupSize);
void checkReduceScatterArguments(
    const torch::Tensor& output, const torch::Tensor& input, int groupSize);
void checkContiguous(const char* operation, const torch::Tensor& tensor);

// Copies pieces[i] into the i-th of pieces.size() equal slices of the flat
// `output`, below autograd's ADInplaceOrView layer: the data changes but the
// version counter (shared with every view of output's base) does not, so
// tensors autograd saved from it stay valid (FSDP's gathered parameters).
// Pieces hold output's dtype.
void copySlicesWithoutVersionBump(
    const torch::Tensor& output, const std::vector<torch::Tensor>& pieces);

// A Work that is already done: size-1 groups and checks that failed early.
class FinishedWork : public PendingWork {
public:
    void wait() override { }
};

} // namespace tb::dist
