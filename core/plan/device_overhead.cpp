#include "plan/explain.h"
#include "plan/memory_parts.h"
#include "plan/memory_sources.h"

#include "common/units.h"

// The two steps from what PyTorch allocates to what the device shows:
// the caching allocator's reserve beyond its allocations (peak_reserved),
// and the CUDA context and NCCL buffers outside the allocator
// (device_used). docs/PLANNER.md, 4.7.
namespace tb::plan::detail {

namespace {

double transientBytes(const PlanResult& r)
{
    double bytes = 0;
    for (const MemoryComponent& c : r.memory)
        if (c.category == MemoryCategory::Activations || c.category == MemoryCategory::Logits
            || c.category == MemoryCategory::Buffers)
            bytes += c.bytes;
    return bytes;
}

void addAllocatorReserve(const PlanContext& ctx, MemoryBuilder& b)
{
    const double transient = transientBytes(b.result);
    const double fraction =
        ctx.in.allocatorOverhead > 0 ? ctx.in.allocatorOverhead : kAllocatorFraction;
    if (auto* c = b.add("allocator_slack", MemoryCategory::Overhead, "Allocator reserve",
            fraction * transient, kSrcAllocator);
        c && ctx.explain)
        Line(c->explanation) << Fixed{fraction * 100, 1}
                             << "% of the short-lived allocations (activations, logits, buffers: "
                             << Bytes{transient}
                             << ") held in cached blocks too small or too split to reuse = "
                             << Bytes{c->bytes}
                             << (ctx.in.allocatorOverhead > 0 ? " (calibrated)" : "");
}

// Resident memory of a trainer process beyond its tensors: the binary and
// LibTorch's libraries and threads. Measured: 302 MiB peak RSS for a 4 MiB
// model on one rank (docs/DISTRIBUTED_BENCHMARKS.md).
void addProcessRuntime(const PlanContext& ctx, MemoryBuilder& b)
{
    const bool given = ctx.in.cudaContextGiB > 0;
    const double bytes =
        given ? ctx.in.cudaContextGiB * common::kGiB : kProcessRuntimeMiB * common::kMiB;
    if (auto* c = b.add("process_runtime", MemoryCategory::Overhead, "Process and LibTorch", bytes,
            kSrcProcess);
        c && ctx.explain)
        Line(c->explanation) << (given ? "given: "
                                       : "a trainer process's resident memory beyond its tensors: ")
                             << Bytes{bytes};
}

void addOutsideAllocator(const PlanContext& ctx, MemoryBuilder& b)
{
    const bool given = ctx.in.cudaContextGiB > 0;
    const double context = (given ? ctx.in.cudaContextGiB : kCudaContextGiB) * common::kGiB;
    if (auto* c = b.add("cuda_context", MemoryCategory::Overhead, "CUDA context and libraries",
            context, kSrcContext);
        c && ctx.explain)
        Line(c->explanation) << (given ? "given: " : "CUDA context + cuBLAS/cuDNN workspaces ")
                             << Bytes{context};
    if (ctx.world <= 1 || ctx.gpu.isCpu)
        return;
    // NCCL's memory grows with its channels and peers (NVIDIA/nccl#986);
    // these are measured totals for one process group.
    const double groupMiB = ctx.world == 2 ? kNcclPairMiB : kNcclGroupMiB;
    const double netMiB = ctx.nodes > 1 ? kNcclNetMiB : 0;
    if (auto* c = b.add("nccl_buffers", MemoryCategory::Overhead, "NCCL communicator buffers",
            (groupMiB + netMiB) * common::kMiB, kSrcNccl);
        c && ctx.explain)
        Line(c->explanation) << "NCCL's own device buffers for a process group of " << ctx.world
                             << " GPUs, outside PyTorch's allocator: " << Fixed{groupMiB, 0}
                             << " MiB" << (netMiB > 0 ? " + 512 MiB NET buffer across nodes" : "")
                             << " = " << Bytes{c->bytes};
}

} // namespace

void addDeviceOverhead(const PlanContext& ctx, MemoryBuilder& b)
{
    // On a CPU, tensors come from the C allocator (no cache to fragment) and
    // there is no CUDA context or NCCL: the process itself is what is left.
    if (ctx.gpu.isCpu) {
        addProcessRuntime(ctx, b);
        return;
    }
    addAllocatorReserve(ctx, b);
    addOutsideAllocator(ctx, b);
}

} // namespace tb::plan::detail
