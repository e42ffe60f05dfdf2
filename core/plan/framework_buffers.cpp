#include "plan/explain.h"
#include "plan/memory_parts.h"
#include "plan/memory_sources.h"

#include <algorithm>
#include <bit>
#include <cmath>

// The buffers DeepSpeed's and FSDP's settings size: ZeRO's reduce and
// all-gather buckets (with overlap_comm and contiguous_gradients), ZeRO-3's
// prefetch bucket and live parameters, FSDP's gathered units, and pinned
// host buffers for offload. docs/PLANNER.md 4.6.
namespace tb::plan::detail {

namespace {

// A bucket setting in elements; 0 is "auto" as the Hugging Face integration
// fills it from the hidden size.
double bucket(double setting, double autoFactor, const PlanContext& ctx)
{
    const double h = double(ctx.model.hiddenSize);
    return setting > 0 ? setting : autoFactor * h * h;
}

bool overlapComm(const PlanContext& ctx)
{
    return ctx.in.deepspeed.overlapComm.value_or(ctx.in.sharding == Sharding::Zero3);
}

} // namespace

void addZeroBuckets(const PlanContext& ctx, MemoryBuilder& b, double work)
{
    const DeepSpeedSettings& ds = ctx.in.deepspeed;
    const double reduce = std::min(bucket(ds.reduceBucketSize, 1.0, ctx), ctx.trainable);
    const double allgather = std::min(bucket(ds.allgatherBucketSize, 1.0, ctx), ctx.trainable);
    // DeepSpeed's docs: "overlap_comm uses 4.5x the allgather_bucket_size and
    // reduce_bucket_size values"; without it, contiguous_gradients keeps one
    // reduce bucket (the IPG buffer) for the gradients being reduced.
    const bool overlap = overlapComm(ctx);
    const double elements =
        overlap ? 4.5 * (reduce + allgather) : (ds.contiguousGradients ? reduce : 0);
    if (auto* c = b.add("comm_buckets", MemoryCategory::Buffers, "Reduce bucket", elements * work,
            kSrcDeepSpeedConfig);
        c && ctx.explain) {
        Line l(c->explanation);
        if (overlap)
            l << "overlap_comm: 4.5 x (reduce_bucket_size " << Count{reduce}
              << " + allgather_bucket_size " << Count{allgather} << ")";
        else
            l << "contiguous_gradients: reduce_bucket_size " << Count{reduce};
        l << " x " << Fixed{work, 0} << " B = " << Bytes{c->bytes};
    }
}

void addZero3Buffers(const PlanContext& ctx, MemoryBuilder& b, double work)
{
    const DeepSpeedSettings& ds = ctx.in.deepspeed;
    // Parameters stay gathered until more than stage3_max_live_parameters are
    // resident; beyond the largest layer (counted with the gathered layer)
    // that budget is held too.
    const double largest = double(ctx.counts.largestLayer);
    const double live = std::max(0.0, std::min(ds.maxLiveParameters, ctx.total) - largest);
    if (auto* c = b.add("live_parameters", MemoryCategory::Buffers, "ZeRO-3 live parameters",
            live * work, kSrcDeepSpeedConfig);
        c && ctx.explain)
        Line(c->explanation) << "stage3_max_live_parameters min(" << Count{ds.maxLiveParameters}
                             << ", " << Count{ctx.total} << ") - the largest layer "
                             << Count{largest} << " = " << Count{live} << " x " << Fixed{work, 0}
                             << " B = " << Bytes{c->bytes};
    if (ctx.world <= 1)
        return;
    const double prefetch = std::min(bucket(ds.prefetchBucketSize, 0.9, ctx), ctx.total);
    const double reduce = std::min(bucket(ds.reduceBucketSize, 1.0, ctx), ctx.trainable);
    if (auto* c = b.add("comm_buckets", MemoryCategory::Buffers, "Prefetch and reduce buckets",
            (prefetch + reduce) * work, kSrcDeepSpeedConfig);
        c && ctx.explain)
        Line(c->explanation) << "stage3_prefetch_bucket_size " << Count{prefetch}
                             << " + reduce_bucket_size " << Count{reduce} << ", x "
                             << Fixed{work, 0} << " B = " << Bytes{c->bytes};
}

int fsdpGatheredLayers(const PlanContext& ctx)
{
    const FsdpSettings& f = ctx.in.fsdp;
    // The current unit, plus the next one when either prefetch is on; without
    // limit_all_gathers the CPU can issue one more ahead of the GPU.
    const bool prefetch = f.backwardPrefetch != BackwardPrefetch::None || f.forwardPrefetch;
    return 1 + (prefetch ? 1 : 0) + (f.limitAllGathers ? 0 : 1);
}

double pinnedHostBytes(const PlanContext& ctx, std::initializer_list<double> flatBuffers)
{
    double bytes = 0;
    for (double buffer : flatBuffers) {
        // PyTorch's pinned (page-locked) host allocator rounds every block up
        // to a power of two (CachingHostAllocator).
        const auto size = static_cast<unsigned long long>(std::ceil(buffer));
        bytes += ctx.in.deepspeed.pinMemory && size > 0 ? double(std::bit_ceil(size)) : buffer;
    }
    return bytes;
}

} // namespace tb::plan::detail
