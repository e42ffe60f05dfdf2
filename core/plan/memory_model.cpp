#include "plan/explain.h"
#include "plan/memory_parts.h"
#include "plan/memory_sources.h"
#include "plan/plan_context.h"

#include "common/units.h"

#include <algorithm>
#include <string>
#include <utility>

// Per-GPU memory at the step's peak, component by component. The formulas
// and their sources are in docs/PLANNER.md ("Memory"); each component's
// explanation repeats its formula with the numbers put in.
namespace tb::plan::detail {

namespace {

const char* optimizerName(Optimizer o)
{
    switch (o) {
    case Optimizer::AdamW:
        return "AdamW (m, v)";
    case Optimizer::AdamW8bit:
        return "8-bit AdamW (m, v in 1 byte + absmax per 2048)";
    case Optimizer::Sgd:
        return "SGD momentum";
    case Optimizer::Adafactor:
        return "Adafactor (factored second moment)";
    }
    return "?";
}

void addWeights(MemoryBuilder& b, double frozenDiv, double trainableWork, const char* workName,
    double trainableDiv, double masterBytes, double masterDiv, const char* layout)
{
    const PlanContext& ctx = b.ctx;
    const char* srcLayout = isFsdp(ctx.in.sharding) ? kSrcFsdp
        : isZero(ctx.in.sharding)                   ? kSrcDeepSpeed
                                                    : kSrcZero;
    if (ctx.full) {
        if (auto* c = b.add("weights", MemoryCategory::Weights, "Weights",
                ctx.total * trainableWork / trainableDiv, srcLayout);
            c && ctx.explain)
            Line(c->explanation) << Count{ctx.total} << " params x " << Fixed{trainableWork, 0}
                                 << " B (" << workName << ")" << Divisor{trainableDiv} << " = "
                                 << Bytes{c->bytes} << layout;
    } else {
        const double base = ctx.frozen16 * ctx.frozenBytes / frozenDiv;
        if (auto* c = b.add("weights", MemoryCategory::Weights, "Frozen base weights",
                base + ctx.quantized * kNf4BytesPerParam / frozenDiv, srcLayout);
            c && ctx.explain) {
            Line l(c->explanation);
            if (ctx.qlora)
                l << Count{ctx.quantized} << " block weights x 0.5 B (NF4) + "
                  << Count{ctx.frozen16} << " embedding/norm params x " << Fixed{ctx.frozenBytes, 0}
                  << " B";
            else
                l << Count{ctx.frozen16} << " params x " << Fixed{ctx.frozenBytes, 0} << " B ("
                  << ctx.actName << ")";
            if (frozenDiv > 1)
                l << " / " << int(frozenDiv);
            l << " = " << Bytes{c->bytes} << layout;
        }
        if (ctx.qlora) {
            if (auto* c =
                    b.add("quant_constants", MemoryCategory::Weights, "NF4 quantization constants",
                        ctx.quantized * kQuantConstantsPerParam / frozenDiv, kSrcQlora);
                c && ctx.explain)
                Line(c->explanation)
                    << Count{ctx.quantized}
                    << " x (1/64 B 8-bit absmax + 4/(64x256) B fp32 second level) = "
                    << Bytes{c->bytes} << " (double quantization: 0.127 bits/param)";
        }
        if (auto* c = b.add("lora_weights", MemoryCategory::Weights, "LoRA adapters",
                ctx.trainable * trainableWork / trainableDiv, kSrcLora);
            c && ctx.explain)
            Line(c->explanation) << "r=" << ctx.in.lora.rank << ": " << Count{ctx.loraPerLayer}
                                 << " per layer x " << int(ctx.model.numLayers)
                                 << " layers = " << Count{ctx.trainable} << " params x "
                                 << Fixed{trainableWork, 0} << " B (" << workName << ")"
                                 << Divisor{trainableDiv} << " = " << Bytes{c->bytes};
    }
    if (auto* c = b.add("master_weights", MemoryCategory::Weights, "Master weights (fp32)",
            ctx.trainable * masterBytes / masterDiv, srcLayout);
        c && ctx.explain)
        Line(c->explanation) << Count{ctx.trainable} << " trainable x 4 B" << Divisor{masterDiv}
                             << " = " << Bytes{c->bytes}
                             << (masterDiv > 1
                                        ? " (sharded)"
                                        : " (mixed precision keeps an fp32 copy for the update)");
}

void addOptimizer(MemoryBuilder& b, double div)
{
    const PlanContext& ctx = b.ctx;
    if (auto* c = b.add("optimizer", MemoryCategory::Optimizer, "Optimizer states",
            ctx.trainable * ctx.optimizerBytes / div, kSrcOptimizer);
        c && ctx.explain)
        Line(c->explanation) << optimizerName(ctx.in.optimizer) << ": " << Count{ctx.trainable}
                             << " x "
                             << Fixed{ctx.optimizerBytes,
                                    ctx.in.optimizer == Optimizer::AdamW
                                            || ctx.in.optimizer == Optimizer::Sgd
                                        ? 0
                                        : 3}
                             << " B" << Divisor{div} << " = " << Bytes{c->bytes};
}

void addGradients(MemoryBuilder& b, double fullBytes, double partitionBytes, double partitionDiv,
    const char* what)
{
    const PlanContext& ctx = b.ctx;
    const double bytes = ctx.trainable * fullBytes + ctx.trainable * partitionBytes / partitionDiv;
    if (auto* c = b.add("gradients", MemoryCategory::Gradients, "Gradients", bytes,
            isZero(ctx.in.sharding)       ? kSrcDeepSpeed
                : isFsdp(ctx.in.sharding) ? kSrcFsdp
                                          : kSrcZero);
        c && ctx.explain) {
        Line l(c->explanation);
        l << Count{ctx.trainable} << " trainable x ";
        if (fullBytes > 0)
            l << Fixed{fullBytes, 0} << " B";
        if (fullBytes > 0 && partitionBytes > 0)
            l << " + " << Count{ctx.trainable} << " x ";
        if (partitionBytes > 0)
            l << Fixed{partitionBytes, 0} << " B / " << int(partitionDiv);
        l << " = " << Bytes{bytes} << what;
    }
}

// Unsharded bytes of one decoder layer as FSDP gathers it, and of the root
// unit (embedding, lm_head, final norm) that stays gathered all step.
double layerGatherBytes(const PlanContext& ctx)
{
    const double perLayer = double(ctx.counts.perLayer) + ctx.loraPerLayer;
    if (!ctx.qlora)
        return perLayer * ctx.act;
    const double quantizedPerLayer = ctx.quantized / double(ctx.model.numLayers);
    return (perLayer - quantizedPerLayer) * ctx.act + quantizedPerLayer * kNf4BytesPerParam;
}

// Parameters gathered outside the decoder layers at the backward peak.
// FSDP's root unit (embedding, final norm, lm_head) stays gathered all step.
// Tunebench gathers an untied embedding for its forward only and the head
// (final norm, lm_head) from the loss through its backward, so at the peak
// only the head is whole; a tied embedding is the head and stays.
double rootParams(const PlanContext& ctx)
{
    const bool apart = ctx.in.engine == Engine::Tunebench && ctx.counts.lmHead > 0;
    return double((apart ? 0 : ctx.counts.embedding) + ctx.counts.lmHead + ctx.counts.finalNorm);
}

// What rootParams counts, for explanations: {short name, its contents}.
std::pair<const char*, const char*> rootName(const PlanContext& ctx)
{
    if (ctx.in.engine != Engine::Tunebench)
        return {"root unit", "(embeddings, lm_head) stays gathered"};
    if (ctx.counts.lmHead > 0)
        return {"head", "(final norm, lm_head; the embedding is gathered for its forward only)"};
    return {"root unit", "(tied embedding, final norm) stays gathered"};
}

// One GPU without accumulation: zero_grad(set_to_none=True), PyTorch's
// default, frees the gradients after each step, and backward creates them
// as it frees the activations. At the start of backward, when activations
// and logits peak, only the first module's gradients exist (lm_head's, or
// the last layer's adapters). That moment is the peak unless the gradients
// outweigh the transients, in which case the optimizer step is, with all
// gradients and no activations (the full count stays, an upper bound).
void gradientsAtPeak(const PlanContext& ctx, PlanResult& r)
{
    if (ctx.world > 1 || ctx.in.gradAccum > 1)
        return;
    MemoryComponent* grads = nullptr;
    double transients = 0;
    for (MemoryComponent& c : r.memory) {
        if (c.key == "gradients")
            grads = &c;
        if (c.category == MemoryCategory::Activations || c.category == MemoryCategory::Logits
            || c.category == MemoryCategory::Buffers)
            transients += c.bytes;
    }
    if (!grads)
        return;
    const double firstParams = ctx.full ? double(ctx.counts.largestLayer) : ctx.loraPerLayer;
    const double first = std::min(grads->bytes, firstParams * grads->bytes / ctx.trainable);
    if (transients < grads->bytes - first)
        return;
    if (ctx.explain)
        grads->explanation += "; only the first module's gradients, " + common::formatBytes(first)
            + ", exist at the peak (one GPU, no accumulation: set_to_none frees them each step "
              "and backward creates them as activations are freed)";
    grads->bytes = first;
}

} // namespace

void computeMemory(const PlanContext& ctx, PlanResult& r)
{
    MemoryBuilder b{ctx, r};
    // Tunebench's ZeRO-3 is the FSDP full-shard engine: plan it as that.
    const bool tunebenchZero3 =
        ctx.in.engine == Engine::Tunebench && ctx.in.sharding == Sharding::Zero3;
    const Sharding s = tunebenchZero3 ? Sharding::FsdpFull : ctx.in.sharding;
    const Offload offload = ctx.in.offload;
    const double W = ctx.world;
    const double S = ctx.shardGroup;
    const double a = ctx.act;
    const bool fp32 = ctx.precision == Precision::Fp32;
    const bool pureBf16 = ctx.precision == Precision::Bf16;
    double cpuBytesPerGpu = 0;
    std::string cpuWhat;

    // Bytes per trainable parameter for the working copy, the master copy,
    // the gradient and the fp32 gradient partition ZeRO keeps for the step.
    const double work = fp32 ? 4 : 2;
    const double master = ctx.mixed ? 4 : 0;

    if (s == Sharding::Ddp) {
        // Tunebench's trainer (and the ZeRO paper's baseline): 16-bit working
        // weights and gradients plus fp32 master; LoRA adapters live in fp32.
        const double trainWork = ctx.lora && ctx.mixed ? 4 : work;
        const double trainMaster = ctx.lora ? 0 : master;
        const double grad = ctx.lora && ctx.mixed ? 4 : work;
        const bool offOpt = offload != Offload::None;
        addWeights(b, 1, trainWork, trainWork == 4 ? "fp32" : ctx.actName, 1,
            offOpt ? 0 : trainMaster, 1, ", replicated on every GPU");
        addGradients(b, grad, 0, 1, ctx.lora && ctx.mixed ? " (fp32 adapter gradients)" : "");
        if (!offOpt) {
            addOptimizer(b, 1);
        } else {
            // Tunebench's trainer: a whole master, master gradient and
            // optimizer states per rank in host memory; the step's gradient
            // is summed on the GPU and crosses once.
            const double hostMaster = pureBf16 ? 2 : 4;
            cpuBytesPerGpu = pinnedHostBytes(ctx,
                {ctx.trainable * hostMaster, ctx.trainable * hostMaster,
                    ctx.trainable * ctx.optimizerBytes});
            cpuWhat = "master weights, master gradients and optimizer states, whole on every rank";
        }
        if (W > 1 && !ctx.in.ddpBucketView) {
            if (auto* c = b.add("comm_buckets", MemoryCategory::Buffers, "DDP all-reduce buckets",
                    ctx.trainable * grad, kSrcDdp);
                c && ctx.explain)
                Line(c->explanation)
                    << "gradient_as_bucket_view=false: the buckets copy every gradient, "
                    << Count{ctx.trainable} << " x " << Fixed{grad, 0}
                    << " B = " << Bytes{c->bytes};
        }
    } else if (s == Sharding::Zero1 || s == Sharding::Zero2) {
        const double gradPartition = ctx.mixed ? 4 : 0;
        const bool offOpt = offload != Offload::None;
        addWeights(b, 1, work, ctx.actName, 1, offOpt ? 0 : master, W,
            ", replicated (ZeRO-1/2 shard only states)");
        if (!offOpt) {
            addGradients(b, work, gradPartition, W,
                ctx.mixed ? " (16-bit buffers + fp32 partition, as DeepSpeed's estimator counts)"
                          : "");
            addOptimizer(b, W);
        } else {
            const double part = ctx.trainable / W;
            cpuBytesPerGpu = pinnedHostBytes(
                ctx, {part * master, part * gradPartition, part * ctx.optimizerBytes});
            cpuWhat = "ZeRO-Offload: fp32 master, fp32 gradient partition and optimizer states";
        }
        if (W > 1)
            addZeroBuckets(ctx, b, work);
    } else if (s == Sharding::Zero3) {
        const double gradPartition = ctx.mixed ? 4 : work;
        const bool offOpt = offload != Offload::None;
        const bool offParams = offload == Offload::OptimizerAndParams;
        if (!offParams)
            addWeights(
                b, W, work, ctx.actName, W, offOpt ? 0 : master, W, ", partitioned over all GPUs");
        if (!offOpt) {
            addGradients(b, 0, gradPartition, W, ctx.mixed ? " (fp32 partition)" : " (partition)");
            addOptimizer(b, W);
        }
        if (offOpt) {
            const double part = ctx.trainable / W;
            cpuBytesPerGpu = pinnedHostBytes(
                ctx, {part * master, part * gradPartition, part * ctx.optimizerBytes});
            cpuWhat = "fp32 master, gradient partition and optimizer states";
            if (offParams) {
                cpuBytesPerGpu +=
                    (ctx.frozen16 * ctx.frozenBytes
                        + ctx.quantized * (kNf4BytesPerParam + kQuantConstantsPerParam)
                        + ctx.trainable * work)
                    / W;
                cpuWhat += ", plus the 16-bit parameter partition";
            }
        }
        const double largest = double(ctx.counts.largestLayer);
        if (auto* c = b.add("gather_buffers", MemoryCategory::Buffers, "ZeRO-3 gathered layer",
                2 * work * largest, kSrcDeepSpeed);
            c && ctx.explain)
            Line(c->explanation) << "largest layer " << Count{largest} << " params x ("
                                 << Fixed{work, 0} << " B params + " << Fixed{work, 0}
                                 << " B grads) = " << Bytes{c->bytes}
                                 << " (DeepSpeed's 4 x largest_layer_params)";
        addZero3Buffers(ctx, b, work);
    } else {
        // FSDP: the persistent copy is the sharded flat parameter in its
        // original dtype (fp32 under mixed precision: it is the master);
        // 16-bit copies exist only while a unit is gathered.
        const bool gradOp = s == Sharding::FsdpGradOp;
        const bool offAll = offload == Offload::OptimizerAndParams;
        const double shardBytes = fp32 || ctx.mixed ? 4 : 2;
        const double grad = pureBf16 ? 2 : 4;
        const char* where =
            s == Sharding::FsdpHybrid ? ", sharded inside the node" : ", sharded over all GPUs";
        if (!offAll) {
            addWeights(b, S, shardBytes, shardBytes == 4 ? "fp32" : "bf16", S, 0, S, where);
            if (ctx.full && ctx.mixed)
                r.memory.back().label = "Weights (fp32 shards = master)";
            addGradients(b, 0, grad, S, " (sharded, parameter dtype)");
            addOptimizer(b, S);
        } else {
            cpuBytesPerGpu = (ctx.trainable * (shardBytes + grad + ctx.optimizerBytes)
                                 + ctx.frozen16 * ctx.frozenBytes
                                 + ctx.quantized * (kNf4BytesPerParam + kQuantConstantsPerParam))
                / S;
            cpuWhat = "FSDP CPUOffload: parameter shards, gradients and optimizer states";
        }
        const double root = rootParams(ctx);
        const double rootGrads = ctx.full ? root * a : 0;
        const double layerParams = layerGatherBytes(ctx);
        const double layerGrads = (ctx.full ? double(ctx.counts.perLayer) : ctx.loraPerLayer) * a;
        if (gradOp) {
            const double all = (ctx.total - ctx.quantized + (ctx.lora ? ctx.trainable : 0)) * a
                + ctx.quantized * kNf4BytesPerParam;
            if (auto* c = b.add("weights_full", MemoryCategory::Weights,
                    "Gathered 16-bit parameters (kept forward to backward)", all, kSrcFsdp);
                c && ctx.explain)
                Line(c->explanation)
                    << "SHARD_GRAD_OP does not free gathered parameters after forward: every unit, "
                    << Bytes{all} << " in " << ctx.actName;
            if (auto* c = b.add("gather_buffers", MemoryCategory::Buffers,
                    "Unsharded gradients of one unit", layerGrads + rootGrads, kSrcFsdp);
                c && ctx.explain) {
                Line l(c->explanation);
                l << "one decoder layer's gradients before reduce-scatter " << Bytes{layerGrads};
                if (rootGrads > 0)
                    l << " + " << rootName(ctx).first << " gradients " << Bytes{rootGrads};
                l << " = " << Bytes{c->bytes};
            }
        } else {
            const int layers = fsdpGatheredLayers(ctx);
            const double bytes = root * a + layers * layerParams + layerGrads + rootGrads;
            if (auto* c = b.add("gather_buffers", MemoryCategory::Buffers,
                    tunebenchZero3 ? "ZeRO-3 gathered units" : "FSDP gathered units", bytes,
                    kSrcFsdp);
                c && ctx.explain)
                Line(c->explanation)
                    << rootName(ctx).first << " " << Bytes{root * a} << " "
                    << rootName(ctx).second << " + " << layers
                    << " decoder layer(s) (current, prefetched as backward_prefetch, "
                       "forward_prefetch and limit_all_gathers allow) x "
                    << Bytes{layerParams} << " + one layer's unsharded gradients "
                    << Bytes{layerGrads}
                    << (rootGrads > 0 ? std::string(" + ") + rootName(ctx).first + " gradients"
                                      : std::string())
                    << " = "
                    << Bytes{bytes};
        }
    }
    r.modelStatesBytes = 0;
    for (const MemoryComponent& c : r.memory)
        if (c.category == MemoryCategory::Weights || c.category == MemoryCategory::Gradients
            || c.category == MemoryCategory::Optimizer
            || (s == Sharding::Zero3 && c.key == "gather_buffers"))
            r.modelStatesBytes += c.bytes;

    addTransientMemory(ctx, b);
    gradientsAtPeak(ctx, r);
    addDeviceOverhead(ctx, b);

    r.peaks = peaksOf(r.memory);
    const double total = r.peaks.deviceUsed;
    r.perGpuBytes = total;
    r.usableBytes = ctx.gpu.usableBytes() * ctx.gpuFraction;
    r.headroomBytes = r.usableBytes - total;
    r.cpuBytesPerNode = cpuBytesPerGpu * ctx.gpusPerNode;
    r.vmRamBytes = ctx.vm ? ctx.vm->ramGiB * common::kGiB : 0;
    bool cpuFits = true;
    if (r.cpuBytesPerNode > 0) {
        // Pinned transfer buffers and the process itself need room too.
        cpuFits = r.vmRamBytes <= 0 || r.cpuBytesPerNode <= 0.9 * r.vmRamBytes;
        if (ctx.explain) {
            Line l(r.cpuExplanation);
            l << cpuWhat << ": " << Bytes{cpuBytesPerGpu} << " per GPU x " << ctx.gpusPerNode
              << " GPUs per node = " << Bytes{r.cpuBytesPerNode};
            if (r.vmRamBytes > 0)
                l << " of " << Bytes{r.vmRamBytes} << " VM RAM (90% usable)";
        }
        if (!cpuFits)
            r.warnings.push_back("offloaded states need more than 90% of the VM's RAM");
    }
    r.fits = total <= r.usableBytes && cpuFits;
}

} // namespace tb::plan::detail
