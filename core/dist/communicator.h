#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

// What the data-parallel strategies need of c10d, behind one small interface,
// so that the backend (Gloo, NCCL, a group of one) stays inside core/dist.
namespace tb::dist {

// A collective in flight. wait() returns when this rank's part is done and
// the output is valid; it throws CommunicationError when the collective
// failed (a peer died, the timeout passed).
class PendingWork {
public:
    virtual ~PendingWork() = default;
    virtual void wait() = 0;
};
using Work = std::unique_ptr<PendingWork>;

// A collective failed. The message names the group, the operation and,
// when the liveness check found them, the ranks that stopped answering.
class CommunicationError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Bytes this rank sent, counted as a ring algorithm (NCCL's) sends them, so
// the figures compare with the planner's communication model whatever the
// backend does underneath: all-reduce 2 (n-1)/n x bytes, all-gather and
// reduce-scatter (n-1)/n x the full buffer's bytes, broadcast the bytes.
struct CommunicationStats {
    std::int64_t allReduceBytes = 0;
    std::int64_t allGatherBytes = 0;
    std::int64_t reduceScatterBytes = 0;
    std::int64_t broadcastBytes = 0;
    std::int64_t collectives = 0;

    std::int64_t totalBytes() const
    {
        return allReduceBytes + allGatherBytes + reduceScatterBytes + broadcastBytes;
    }
};

// One process group. Tensors are contiguous and live on the group's device.
// Every method is called by every rank of the group in the same order.
class Communicator {
public:
    virtual ~Communicator() = default;

    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual std::string name() const = 0; // "world", "shard group 0", ...

    // Sum over ranks, in place. fp32, fp64 and integer tensors; narrower
    // floats are summed in fp32 by the caller (the communication dtype the
    // trainer states).
    virtual Work allReduceSum(torch::Tensor tensor) = 0;
    // output (size() x input.numel() elements, 1-D) receives every rank's
    // input in rank order. Any dtype (bf16 travels as its bits). The output
    // is written without bumping its autograd version counter, so it can
    // back parameters that autograd saved for backward (FSDP's all-gather).
    virtual Work allGather(torch::Tensor output, torch::Tensor input) = 0;
    // output (input.numel() / size() elements) receives the sum over ranks
    // of this rank's slice of input. May overwrite input. fp32/fp64.
    virtual Work reduceScatterSum(torch::Tensor output, torch::Tensor input) = 0;
    virtual Work broadcast(torch::Tensor tensor, int root) = 0;
    virtual void barrier() = 0;

    virtual CommunicationStats stats() const = 0;
};

} // namespace tb::dist
