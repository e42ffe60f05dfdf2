#pragma once

#include "plan/plan_context.h"

#include <initializer_list>

// Shared by the two halves of the memory model: model states
// (memory_model.cpp) and the per-step transients (activation_memory.cpp).
namespace tb::plan::detail {

struct MemoryBuilder {
    const PlanContext& ctx;
    PlanResult& result;

    MemoryComponent* add(const char* key, MemoryCategory category, const char* label, double bytes,
        const char* source)
    {
        if (bytes <= 0)
            return nullptr;
        MemoryComponent& c = result.memory.emplace_back();
        c.key = key;
        c.category = category;
        c.bytes = bytes;
        if (ctx.explain) {
            c.label = label;
            c.source = source;
        }
        return &c;
    }
};

// Unsharded bytes of one decoder layer as a sharded strategy gathers it.
double layerGatherBytes(const PlanContext& ctx);
// Parameters gathered outside the decoder layers at the backward peak
// (FSDP's root unit; Tunebench's head).
double rootParams(const PlanContext& ctx);

// The load, checkpoint and export phases of Tunebench's trainer beside the
// step (phase_memory.cpp); the step alone for the reference engines.
void addPhases(const PlanContext& ctx, PlanResult& r, Sharding planned);

// Activations, eager attention scores, logits and loss, appended to the
// builder's result.
void addTransientMemory(const PlanContext& ctx, MemoryBuilder& b);

// Buffers sized by DeepSpeed's and FSDP's settings (framework_buffers.cpp).
void addZeroBuckets(const PlanContext& ctx, MemoryBuilder& b, double work);
void addZero3Buffers(const PlanContext& ctx, MemoryBuilder& b, double work);
int fsdpGatheredLayers(const PlanContext& ctx);
// Host bytes of offloaded flat buffers, rounded as pinned memory is when pin_memory is set.
double pinnedHostBytes(const PlanContext& ctx, std::initializer_list<double> flatBuffers);

// What the caching allocator reserves beyond the allocations, and what the
// CUDA runtime and NCCL hold outside it (device_overhead.cpp).
void addDeviceOverhead(const PlanContext& ctx, MemoryBuilder& b);

} // namespace tb::plan::detail
