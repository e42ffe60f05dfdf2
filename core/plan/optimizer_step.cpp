#include "plan/explain.h"
#include "plan/memory_parts.h"

#include "common/units.h"

#include <algorithm>

// The optimizer step as its own phase: every gradient alive, no activations,
// and what the update allocates beyond its states. docs/PLANNER.md, 4.12.
namespace tb::plan::detail {

namespace {

// The largest tensor the optimizer updates on a GPU: a whole matrix for a
// full fine-tune (the embedding or the head), an adapter matrix for LoRA;
// a sharded rank updates its share.
double largestUpdatedTensor(const PlanContext& ctx)
{
    double largest = double(ctx.counts.largestLayer);
    if (ctx.lora) {
        largest = 0;
        model::LinearShape shapes[model::kMaxBlockLinears];
        const int n = model::blockLinearShapes(ctx.model, shapes);
        for (int i = 0; i < n; ++i)
            if (ctx.targets.has(shapes[i].kind))
                largest = std::max(largest,
                    double(ctx.in.lora.rank)
                        * double(std::max(shapes[i].inFeatures, shapes[i].outFeatures)));
    }
    return largest / ctx.shardGroup;
}

struct Temporaries {
    double bytes = 0;
    std::string why;
};

// What one update allocates beyond the states, per GPU. torch.optim.AdamW's
// foreach path (_multi_tensor_adamw) makes sqrt(exp_avg_sq) for every
// parameter of a group at once, then divides and adds eps in place: one
// tensor the size of the variance state, half of AdamW's states. The fused
// kernels (PyTorch's, DeepSpeed's FusedAdam, bitsandbytes' 8-bit) update in
// place. transformers' Adafactor works a parameter at a time: the update and
// the factored estimate in fp32, plus fp32 copies of a 16-bit gradient and
// parameter. Optimizer states offloaded to the CPU update there.
Temporaries temporariesOf(const PlanContext& ctx, double optimizerOnGpu)
{
    Temporaries t;
    if (optimizerOnGpu <= 0) {
        t.why = "the optimizer updates on the CPU";
        return t;
    }
    switch (ctx.in.optimizer) {
    case Optimizer::AdamW:
        if (ctx.optimizerKernel == OptimizerKernel::Foreach) {
            t.bytes = optimizerOnGpu / 2;
            t.why = "foreach AdamW: sqrt(exp_avg_sq) for every parameter at once, the size of the "
                    "variance state, "
                + common::formatBytes(t.bytes);
        } else {
            t.why = std::string("fused AdamW updates in place (") + ctx.optimizerKernelBy + ")";
        }
        break;
    case Optimizer::AdamW8bit:
        t.why = "bitsandbytes' 8-bit AdamW updates each tensor in place";
        break;
    case Optimizer::Sgd:
        t.why = "SGD with momentum updates in place";
        break;
    case Optimizer::Adafactor: {
        const bool sixteenBit = ctx.full && ctx.precision == Precision::Bf16;
        const double perElement = 8 + (sixteenBit ? 8 : 0);
        const double largest = largestUpdatedTensor(ctx);
        t.bytes = perElement * largest;
        Line(t.why) << "Adafactor, a tensor at a time: the largest, " << Count{largest} << " x "
                    << Fixed{perElement, 0} << " B (fp32 update and factored estimate"
                    << (sixteenBit ? ", fp32 copies of the bf16 gradient and parameter" : "")
                    << ") = " << Bytes{t.bytes};
        break;
    }
    }
    return t;
}

double componentBytes(const PlanResult& r, const char* key)
{
    double bytes = 0;
    for (const MemoryComponent& c : r.memory)
        if (c.key == key)
            bytes += c.bytes;
    return bytes;
}

} // namespace

PhasePeak optimizerStepPhase(const PlanContext& ctx, PlanResult& r, double persistent,
    double allGradients, double outsideAllocator)
{
    // The buckets DDP and ZeRO keep from start to end stay through the step;
    // the gradients are all alive, the backward peak's count or not.
    const double buckets = componentBytes(r, "comm_buckets");
    const double missingGradients = allGradients - componentBytes(r, "gradients");
    const Temporaries temps = temporariesOf(ctx, componentBytes(r, "optimizer"));
    r.optimizerTemporaryBytes = temps.bytes;
    PhasePeak p{Phase::OptimizerStep, persistent + missingGradients + buckets + temps.bytes, {}};
    p.allocated = p.bytes - outsideAllocator;
    if (ctx.explain) {
        Line l(p.explanation);
        l << "the states with every gradient";
        if (missingGradients > 0)
            l << " (+ " << Bytes{missingGradients} << " not yet alive at the backward peak)";
        if (buckets > 0)
            l << ", the communication buckets";
        l << "; " << temps.why;
    }
    return p;
}

} // namespace tb::plan::detail
