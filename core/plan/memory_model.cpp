#include "plan/explain.h"
#include "plan/memory_parts.h"
#include "plan/memory_sources.h"
#include "plan/model_state_terms.h"
#include "plan/plan_context.h"

#include "common/units.h"

#include <algorithm>
#include <string>
#include <utility>

// Per-GPU memory at the step's peak, component by component. The formulas
// and their sources are in docs/PLANNER.md ("Memory"); each component's
// explanation repeats its formula with the numbers put in.
namespace tb::plan::detail {

// Unsharded bytes of one decoder layer as FSDP gathers it.
double layerGatherBytes(const PlanContext& ctx)
{
    const double perLayer = double(ctx.counts.perLayer) + ctx.loraPerLayer;
    const double layers = double(ctx.model.numLayers);
    return (perLayer - lowBitParams(ctx) / layers) * ctx.act + lowBitBytes(ctx) / layers;
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

namespace {

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
// the last layer's adapters); at its end every gradient does and the
// activations are gone, which is the optimizer step's phase.
// Tunebench's trainer keeps flat gradient buffers from loading on.
void gradientsAtPeak(const PlanContext& ctx, PlanResult& r)
{
    if (ctx.world > 1 || ctx.in.gradAccum > 1 || ctx.in.engine == Engine::Tunebench)
        return;
    for (MemoryComponent& grads : r.memory) {
        if (grads.key != "gradients")
            continue;
        const double firstParams = ctx.full ? double(ctx.counts.largestLayer) : ctx.loraPerLayer;
        double first = std::min(grads.bytes, firstParams * grads.bytes / ctx.trainable);
        if (ctx.hf) {
            // They are made after the loss's backward has freed its buffers,
            // beside the logits' fp32 gradient: only what exceeds them counts.
            const MemoryComponent* logits = r.component("logits");
            const double tv = ctx.tokensPerMicro * double(ctx.model.vocabSize);
            first = std::max(0.0, first + 4 * tv - (logits ? logits->bytes : 0));
        }
        if (ctx.explain)
            grads.explanation += "; only the first module's gradients, "
                + common::formatBytes(first)
                + ", exist at the backward peak (one GPU, no accumulation: set_to_none frees "
                  "them each step and backward creates them as activations are freed)";
        grads.bytes = first;
    }
}

} // namespace

namespace {

// What offload keeps in host memory, per GPU, and what it is.
struct HostStates {
    double bytesPerGpu = 0;
    std::string what;
};

// Bytes per trainable parameter of the working copy and of the fp32 master.
double workBytes(const PlanContext& ctx)
{
    return ctx.precision == Precision::Fp32 ? 4 : 2;
}
double masterBytes(const PlanContext& ctx)
{
    return ctx.mixed ? 4 : 0;
}

// Tunebench's trainer (and the ZeRO paper's baseline): 16-bit working
// weights and gradients plus fp32 master; LoRA adapters live in fp32.
HostStates ddpStates(const PlanContext& ctx, MemoryBuilder& b)
{
    const double trainWork = ctx.lora ? ctx.adapterBytes : workBytes(ctx);
    const double trainMaster = ctx.lora ? 0 : masterBytes(ctx);
    const double grad = trainWork;
    const bool offOpt = ctx.in.offload != Offload::None;
    HostStates host;
    addWeights(b,
        {.trainableBytes = trainWork,
            .trainableDtype = trainWork == 4 ? "fp32" : ctx.actName,
            .masterBytes = offOpt ? 0 : trainMaster,
            .where = ", replicated on every GPU"});
    // Our trainer sums each step's gradients into an fp32 master gradient
    // before the optimizer reads them.
    const bool masterGrads = ctx.in.engine == Engine::Tunebench && trainMaster > 0;
    addGradients(b, grad, masterGrads ? trainMaster : 0, 1,
        ctx.lora && trainWork == 4 && ctx.act != 4 ? " (fp32 adapter gradients)"
            : masterGrads ? " (16-bit gradients + fp32 master gradients, Tunebench's trainer)"
                          : "");
    if (!offOpt) {
        addOptimizer(b, 1);
    } else {
        // A whole master, master gradient and optimizer states per rank in
        // host memory; the step's gradient is summed on the GPU and crosses once.
        const double hostMaster = ctx.precision == Precision::Bf16 ? 2 : 4;
        host.bytesPerGpu = pinnedHostBytes(ctx,
            {ctx.trainable * hostMaster, ctx.trainable * hostMaster,
                ctx.trainable * ctx.optimizerBytes});
        host.what = "master weights, master gradients and optimizer states, whole on every rank";
    }
    if (ctx.world > 1 && !ctx.in.ddpBucketView) {
        if (auto* c = b.add("comm_buckets", MemoryCategory::Buffers, "DDP all-reduce buckets",
                ctx.trainable * grad, kSrcDdp);
            c && ctx.explain)
            Line(c->explanation)
                << "gradient_as_bucket_view=false: the buckets copy every gradient, "
                << Count{ctx.trainable} << " x " << Fixed{grad, 0} << " B = " << Bytes{c->bytes};
    }
    return host;
}

HostStates zero12States(const PlanContext& ctx, MemoryBuilder& b)
{
    const double W = ctx.world;
    const double work = workBytes(ctx);
    const double master = masterBytes(ctx);
    // DeepSpeed keeps an fp32 gradient partition under mixed precision; our
    // trainer keeps one in fp32 as well.
    const double gradPartition = ctx.mixed || ctx.in.engine == Engine::Tunebench ? 4 : 0;
    const bool offOpt = ctx.in.offload != Offload::None;
    HostStates host;
    addWeights(b,
        {.trainableBytes = work,
            .trainableDtype = ctx.actName,
            .masterBytes = offOpt ? 0 : master,
            .masterDivisor = W,
            .where = ", replicated (ZeRO-1/2 shard only states)"});
    if (!offOpt) {
        addGradients(b, work, gradPartition, W,
            ctx.mixed ? " (16-bit buffers + fp32 partition, as DeepSpeed's estimator counts)" : "");
        addOptimizer(b, W);
    } else {
        const double part = ctx.trainable / W;
        host.bytesPerGpu =
            pinnedHostBytes(ctx, {part * master, part * gradPartition, part * ctx.optimizerBytes});
        host.what = "ZeRO-Offload: fp32 master, fp32 gradient partition and optimizer states";
    }
    if (W > 1)
        addZeroBuckets(ctx, b, work);
    return host;
}

// The 16-bit (and NF4 or MXFP4) parameters a rank holds of the whole model, once;
// the quantization constants only where they are sharded with the codes.
double parameterBytes(const PlanContext& ctx, double trainableBytes)
{
    const double constants = quantConstantsStayWhole(ctx) ? 0 : quantConstantsPerParam(ctx);
    return ctx.frozen16 * ctx.frozenBytes + lowBitBytes(ctx) + ctx.quantized * constants
        + ctx.trainable * trainableBytes;
}

HostStates zero3States(const PlanContext& ctx, MemoryBuilder& b)
{
    const double W = ctx.world;
    const double work = workBytes(ctx);
    const double master = masterBytes(ctx);
    const double gradPartition = ctx.mixed ? 4 : work;
    const bool offOpt = ctx.in.offload != Offload::None;
    const bool offParams = ctx.in.offload == Offload::OptimizerAndParams;
    HostStates host;
    if (!offParams)
        addWeights(b,
            {.frozenDivisor = W,
                .trainableBytes = work,
                .trainableDtype = ctx.actName,
                .trainableDivisor = W,
                .masterBytes = offOpt ? 0 : master,
                .masterDivisor = W,
                .where = ", partitioned over all GPUs"});
    if (!offOpt) {
        addGradients(b, 0, gradPartition, W, ctx.mixed ? " (fp32 partition)" : " (partition)");
        addOptimizer(b, W);
    } else {
        const double part = ctx.trainable / W;
        host.bytesPerGpu =
            pinnedHostBytes(ctx, {part * master, part * gradPartition, part * ctx.optimizerBytes});
        host.what = "fp32 master, gradient partition and optimizer states";
        if (offParams) {
            host.bytesPerGpu += parameterBytes(ctx, work) / W;
            host.what += ", plus the 16-bit parameter partition";
            addQuantConstants(b, W);
        }
    }
    const double largest = double(ctx.counts.largestLayer);
    if (auto* c = b.add("gather_buffers", MemoryCategory::Buffers, "ZeRO-3 gathered layer",
            2 * work * largest, kSrcDeepSpeed);
        c && ctx.explain)
        Line(c->explanation) << "largest layer " << Count{largest} << " params x ("
                             << Fixed{work, 0} << " B params + " << Fixed{work, 0}
                             << " B grads) = " << Bytes{c->bytes}
                             << " (DeepSpeed's estimator: 2 x largest_layer_params x "
                             << Fixed{work, 0} << " B)";
    addZero3Buffers(ctx, b, work);
    return host;
}

// SHARD_GRAD_OP keeps every gathered unit from forward to backward.
void addGradOpBuffers(const PlanContext& ctx, MemoryBuilder& b, double layerGrads, double rootGrads)
{
    const double a = ctx.act;
    const double all =
        (ctx.total - lowBitParams(ctx) + (ctx.lora ? ctx.trainable : 0)) * a + lowBitBytes(ctx);
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
}

// FULL_SHARD (and Tunebench's ZeRO-3): the root, the layers gathered at
// once and one layer's unsharded gradients.
void addFullShardBuffers(
    const PlanContext& ctx, MemoryBuilder& b, double layerGrads, double rootGrads, bool asZero3)
{
    const double root = rootParams(ctx);
    const double layerParams = layerGatherBytes(ctx);
    const int layers = fsdpGatheredLayers(ctx);
    // Tunebench releases an untied head before it prefetches the layer below
    // the last: one layer beside the head, or the prefetched layers alone.
    const bool headApart = ctx.in.engine == Engine::Tunebench && ctx.counts.lmHead > 0;
    const double gathered = headApart
        ? std::max(root * ctx.act + (layers - 1) * layerParams, layers * layerParams)
        : root * ctx.act + layers * layerParams;
    const double bytes = gathered + layerGrads + rootGrads;
    if (auto* c = b.add("gather_buffers", MemoryCategory::Buffers,
            asZero3 ? "ZeRO-3 gathered units" : "FSDP gathered units", bytes, kSrcFsdp);
        c && ctx.explain) {
        Line l(c->explanation);
        if (headApart)
            l << "the larger of the head " << Bytes{root * ctx.act} << " " << rootName(ctx).second
              << " with " << layers - 1 << " decoder layer(s), and " << layers
              << " decoder layers (the head is released before the layer below the last is "
                 "prefetched), x "
              << Bytes{layerParams};
        else
            l << rootName(ctx).first << " " << Bytes{root * ctx.act} << " " << rootName(ctx).second
              << " + " << layers
              << " decoder layer(s) (current, prefetched as backward_prefetch, forward_prefetch "
                 "and limit_all_gathers allow) x "
              << Bytes{layerParams};
        l << " + one layer's unsharded gradients " << Bytes{layerGrads}
          << (rootGrads > 0 ? std::string(" + ") + rootName(ctx).first + " gradients"
                            : std::string())
          << " = " << Bytes{bytes};
    }
}

// The gradient of a decoder layer's unit that holds its adapters beside its
// frozen weights: a flat parameter's gradient is as large as the flat
// parameter, frozen parts included (PyTorch's FSDP documentation: mixing
// frozen and trainable parameters in a unit costs the gradient memory of
// not freezing them). QLoRA's codes are stored in a 16-bit dtype under
// FSDP, so their gradient is the size of the codes.
double layerUnitGradientBytes(const PlanContext& ctx, double gradBytes)
{
    if (ctx.qlora)
        return layerGatherBytes(ctx);
    return (double(ctx.counts.perLayer) + ctx.loraPerLayer) * gradBytes;
}

// Gradient accumulation under no_sync holds every unit's gradient
// unsharded from the first micro-batch to the step.
bool holdsUnshardedGradients(const PlanContext& ctx)
{
    return ctx.in.fsdp.noSync && ctx.in.gradAccum > 1;
}

// FSDP's gradients: sharded like the parameters after each micro-batch's
// reduce-scatter, or whole under no_sync; each unit with a trainable
// parameter has one, over the whole unit when adapters share their
// layer's unit.
void addFsdpGradients(const PlanContext& ctx, MemoryBuilder& b, double gradBytes, double shards)
{
    const bool whole = holdsUnshardedGradients(ctx);
    const bool layerUnits = ctx.in.fsdp.adaptersInLayerUnits && ctx.lora;
    if (!layerUnits) {
        addGradients(b, whole ? gradBytes : 0, whole ? 0 : gradBytes, shards,
            whole ? " (unsharded under no_sync, parameter dtype)" : " (sharded, parameter dtype)");
        return;
    }
    const double layers = double(ctx.model.numLayers);
    const double perLayer = layerUnitGradientBytes(ctx, gradBytes);
    const double divisor = whole ? 1 : shards;
    if (auto* c = b.add("gradients", MemoryCategory::Gradients, "Gradients",
            layers * perLayer / divisor, kSrcFsdp);
        c && ctx.explain) {
        Line l(c->explanation);
        l << Fixed{layers, 0} << " decoder layer units x " << Bytes{perLayer}
          << " (the adapters share each layer's unit, so its gradient covers the frozen weights)";
        if (whole)
            l << ", unsharded under no_sync";
        else
            l << " / " << Fixed{shards, 0} << " GPUs";
        l << " = " << Bytes{c->bytes};
    }
}

// PyTorch's FSDP runs FULL_SHARD and SHARD_GRAD_OP as NO_SHARD on a world
// of one GPU: each flat parameter is used in place, with no gathered copy
// unless mixed precision casts it.
bool runsAsNoShard(const PlanContext& ctx, Sharding s)
{
    return ctx.world == 1 && ctx.in.engine != Engine::Tunebench && !ctx.mixed
        && ctx.in.offload == Offload::None
        && (s == Sharding::FsdpFull || s == Sharding::FsdpGradOp);
}

// FSDP: the persistent copy is the sharded flat parameter in its original
// dtype (fp32 under mixed precision: it is the master); 16-bit copies exist
// only while a unit is gathered.
HostStates fsdpStates(const PlanContext& ctx, MemoryBuilder& b, Sharding s, bool asZero3)
{
    const double S = ctx.shardGroup;
    const double shardBytes = ctx.precision == Precision::Fp32 || ctx.mixed ? 4 : 2;
    const double grad = ctx.precision == Precision::Bf16 ? 2 : 4;
    HostStates host;
    if (ctx.in.offload != Offload::OptimizerAndParams) {
        addWeights(b,
            {.frozenDivisor = S,
                .trainableBytes = shardBytes,
                .trainableDtype = shardBytes == 4 ? "fp32" : "bf16",
                .trainableDivisor = S,
                .where = runsAsNoShard(ctx, s)  ? ", whole (FSDP runs NO_SHARD on one GPU)"
                    : s == Sharding::FsdpHybrid ? ", sharded inside the node"
                                                : ", sharded over all GPUs",
                .label = ctx.mixed ? "Weights (fp32 shards = master)" : "Weights"});
        addFsdpGradients(ctx, b, grad, S);
        addOptimizer(b, S);
    } else {
        host.bytesPerGpu =
            (ctx.trainable * (shardBytes + grad + ctx.optimizerBytes) + parameterBytes(ctx, 0)) / S;
        host.what = "FSDP CPUOffload: parameter shards, gradients and optimizer states";
        addQuantConstants(b, S);
        // no_sync keeps the unsharded gradients on the GPU, offload or not.
        if (holdsUnshardedGradients(ctx))
            addFsdpGradients(ctx, b, grad, S);
    }
    if (runsAsNoShard(ctx, s))
        return host;
    const double rootGrads = ctx.full ? rootParams(ctx) * ctx.act : 0;
    const double layerGrads = ctx.in.fsdp.adaptersInLayerUnits && ctx.lora
        ? layerUnitGradientBytes(ctx, grad)
        : (ctx.full ? double(ctx.counts.perLayer) : ctx.loraPerLayer) * ctx.act;
    if (s == Sharding::FsdpGradOp)
        addGradOpBuffers(ctx, b, layerGrads, rootGrads);
    else
        addFullShardBuffers(ctx, b, layerGrads, rootGrads, asZero3);
    return host;
}

// Our trainer on CPU ranks talks over Gloo, whose all-gather and
// reduce-scatter each hold a whole-unit copy while they run (NCCL works in
// place). At the start of backward one of each is in flight: the largest
// unit's gather (ZeRO-3 and FULL_SHARD; SHARD_GRAD_OP and ZeRO-1/2 gather
// outside backward) and, for a full fine-tune, the largest unit's gradients.
void addGlooStaging(const PlanContext& ctx, MemoryBuilder& b, Sharding s)
{
    if (!ctx.gpu.isCpu || ctx.world <= 1 || s == Sharding::Ddp
        || ctx.in.engine != Engine::Tunebench)
        return;
    const double head = rootParams(ctx) * ctx.act;
    const bool gathersInBackward =
        s == Sharding::FsdpFull || s == Sharding::FsdpHybrid || s == Sharding::Zero3;
    const double gather = gathersInBackward ? std::max(head, layerGatherBytes(ctx)) : 0;
    const double layerGrads = (ctx.full ? double(ctx.counts.perLayer) : ctx.loraPerLayer) * 4;
    const double reduce = std::max(ctx.full ? rootParams(ctx) * 4 : 0, layerGrads);
    if (auto* c = b.add("gloo_staging", MemoryCategory::Buffers, "Gloo collective copies",
            gather + reduce, kSrcGloo);
        c && ctx.explain)
        Line(c->explanation) << "the largest unit's all-gather copy " << Bytes{gather}
                             << " + the largest unit's fp32 gradients in reduce-scatter "
                             << Bytes{reduce} << " = " << Bytes{c->bytes};
}

double modelStatesBytes(const PlanResult& r, Sharding s)
{
    double bytes = 0;
    for (const MemoryComponent& c : r.memory)
        if (c.category == MemoryCategory::Weights || c.category == MemoryCategory::Gradients
            || c.category == MemoryCategory::Optimizer
            || (s == Sharding::Zero3 && c.key == "gather_buffers"))
            bytes += c.bytes;
    return bytes;
}

// What offload may keep on a node's host: pinned transfer buffers and the
// process itself need the rest of the VM's RAM.
constexpr double kUsableRam = 0.9;

// Fits when the device's peak fits the usable memory and what offload keeps
// on the host fits the usable part of the VM's RAM.
void judgeFit(const PlanContext& ctx, const HostStates& host, PlanResult& r)
{
    r.perGpuBytes = r.peakPhase()->bytes;
    r.usableBytes = ctx.gpu.usableBytes() * ctx.gpuFraction;
    r.headroomBytes = r.usableBytes - r.perGpuBytes;
    r.cpuBytesPerNode = host.bytesPerGpu * ctx.gpusPerNode;
    r.vmRamBytes = ctx.vm ? ctx.vm->ramGiB * common::kGiB : 0;
    bool cpuFits = true;
    if (r.cpuBytesPerNode > 0) {
        cpuFits = r.vmRamBytes <= 0 || r.cpuBytesPerNode <= kUsableRam * r.vmRamBytes;
        const std::string usable = common::formatFixed(kUsableRam * 100, 0) + "%";
        if (ctx.explain) {
            Line l(r.cpuExplanation);
            l << host.what << ": " << Bytes{host.bytesPerGpu} << " per GPU x " << ctx.gpusPerNode
              << " GPUs per node = " << Bytes{r.cpuBytesPerNode};
            if (r.vmRamBytes > 0)
                l << " of " << Bytes{r.vmRamBytes} << " VM RAM (" << usable << " usable)";
        }
        if (!cpuFits)
            r.warnings.push_back("offloaded states need more than " + usable + " of the VM's RAM");
    }
    if (r.loadHostBytesPerNode > 0 && r.vmRamBytes > 0
        && r.loadHostBytesPerNode > kUsableRam * r.vmRamBytes) {
        cpuFits = false;
        r.warnings.push_back("loading the model needs "
            + common::formatBytes(r.loadHostBytesPerNode) + " of host memory per node, more than "
            + common::formatFixed(kUsableRam * 100, 0) + "% of the VM's RAM");
    }
    r.fits = r.perGpuBytes <= r.usableBytes && cpuFits;
}

} // namespace

void computeMemory(const PlanContext& ctx, PlanResult& r)
{
    MemoryBuilder b{ctx, r};
    // Tunebench's ZeRO-3 is the FSDP full-shard engine: plan it as that.
    const bool tunebenchZero3 =
        ctx.in.engine == Engine::Tunebench && ctx.in.sharding == Sharding::Zero3;
    const Sharding s = tunebenchZero3 ? Sharding::FsdpFull : ctx.in.sharding;
    HostStates host;
    if (s == Sharding::Ddp)
        host = ddpStates(ctx, b);
    else if (s == Sharding::Zero1 || s == Sharding::Zero2)
        host = zero12States(ctx, b);
    else if (s == Sharding::Zero3)
        host = zero3States(ctx, b);
    else
        host = fsdpStates(ctx, b, s, tunebenchZero3);
    r.modelStatesBytes = modelStatesBytes(r, s);
    addGlooStaging(ctx, b, s);

    addTransientMemory(ctx, b);
    double allGradients = 0;
    for (const MemoryComponent& c : r.memory)
        if (c.key == "gradients")
            allGradients += c.bytes;
    gradientsAtPeak(ctx, r);
    addDeviceOverhead(ctx, b);
    addPhases(ctx, r, s, allGradients);
    judgeFit(ctx, host, r);
}

} // namespace tb::plan::detail
