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

// The phases beside forward and backward (phase_memory.cpp): the optimizer
// step for every engine, load, checkpoint and export for Tunebench's trainer.
// allGradients: the gradient bytes before the backward peak counted fewer.
void addPhases(const PlanContext& ctx, PlanResult& r, Sharding planned, double allGradients);

// The optimizer step (optimizer_step.cpp): the persistent states and process
// with every gradient, the buckets that live through the run, and what the
// update allocates (also set as r.optimizerTemporaryBytes); outsideAllocator
// is the part no allocator holds.
PhasePeak optimizerStepPhase(const PlanContext& ctx, PlanResult& r, double persistent,
    double allGradients, double outsideAllocator);

// Bytes of activations one decoder layer keeps for backward, and its parts.
struct LayerActivations {
    double norms = 0, attention = 0, mlp = 0, lora = 0, scores = 0;
    double total() const { return norms + attention + mlp + lora; }
};

// Bytes per score element eager attention keeps for backward, and a
// mixture of experts' MLP (activation_memory.cpp).
double scoreBytesPerElement(const PlanContext& ctx);
double expertActivations(const PlanContext& ctx, bool savesInputs);

// A decoder layer of a transformers model with peft's adapters as the
// Hugging Face Trainer runs it (hf_activations.cpp, docs/PLANNER.md 4.14),
// and the 16-bit copies autocast makes of fp32 weights for the step.
LayerActivations hfLayerActivations(const PlanContext& ctx);
double hfAutocastCopies(const PlanContext& ctx);

// Activations, eager attention scores, logits and loss, appended to the
// builder's result.
void addTransientMemory(const PlanContext& ctx, MemoryBuilder& b);

// DPO (preference_memory.cpp, docs/PLANNER.md 4.15): the policy's logits of
// the completion tokens at log-softmax's backward, and what the reference
// forward leaves at the step's peak: its log-probabilities, and whatever its
// transient peak (one layer at a time, or its own completion logits)
// exceeds the policy's transients by (`policyTransient`).
double dpoLogitsBytes(const PlanContext& ctx);
void addDpoLogits(const PlanContext& ctx, MemoryBuilder& b);
void addDpoReference(const PlanContext& ctx, MemoryBuilder& b, const LayerActivations& layer,
    double policyTransient);

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
