#include "plan/throughput_math.h"

#include <algorithm>
#include <cmath>

// Formulas and sources: docs/PLANNER.md section 5.
namespace tb::plan::detail {

namespace {

double positive(int value)
{
    return double(std::max(1, value));
}

// Collective times per micro-batch and per step, and the compute they hide behind.
struct CommWindows {
    double micro = 0, windowMicro = 0, collectivesMicro = 0;
    double step = 0, windowStep = 0, collectivesStep = 0;
    double afterStep = 0; // never overlapped (ZeRO-1/2's all-gather of updated weights)
    double edgesMicro = 0, edgesStep = 0; // exposed whatever the overlap
};

CommWindows commWindows(const PlanContext& ctx, const Links& link, Communication& c,
    double computeMicro, double backwardShare)
{
    CommWindows w;
    const double W = ctx.world;
    const double L = double(ctx.model.numLayers);
    const double ring = W > 1 ? (W - 1) / W : 0;
    const double G = c.gradientBytes;
    const double P = c.parameterBytes;
    const double bw = c.bandwidth;
    const double updatedWeights = ring * ctx.trainable * ctx.act / bw;
    // The last gradient bucket is reduced after backward ends; sharded
    // strategies gather the first unit before forward can start and
    // reduce-scatter the last one after backward, one layer each.
    const double lastBucket = std::min(G, kDdpBucketBytes) / bw;
    const double layerEdges = ring * (P + G) / L / bw;
    switch (ctx.in.sharding) {
    case Sharding::Ddp:
        w.step = 2 * ring * G / bw;
        w.collectivesStep = std::ceil(G / kDdpBucketBytes);
        w.windowStep = computeMicro * backwardShare;
        w.edgesStep = 2 * ring * lastBucket;
        c.pattern = "all-reduce of gradients once per step, overlapped with the last backward";
        break;
    case Sharding::Zero1:
    case Sharding::Zero2: {
        // ZeRO-2 reduce-scatters its partitioned gradients every
        // micro-batch, ZeRO-1 once per step; both all-gather the updated
        // weights after the step.
        const bool everyMicro = ctx.in.sharding == Sharding::Zero2;
        (everyMicro ? w.micro : w.step) = ring * G / bw;
        (everyMicro ? w.collectivesMicro : w.collectivesStep) = std::ceil(G / kDdpBucketBytes);
        (everyMicro ? w.windowMicro : w.windowStep) = computeMicro * backwardShare;
        (everyMicro ? w.edgesMicro : w.edgesStep) = ring * lastBucket;
        w.afterStep = updatedWeights;
        c.pattern = everyMicro ? "reduce-scatter of gradients every micro-batch (overlapped) + "
                                 "all-gather of updated weights after the step"
                               : "reduce-scatter of gradients per step (overlapped) + all-gather "
                                 "of updated weights after the step";
        break;
    }
    case Sharding::Zero3:
    case Sharding::FsdpFull:
    case Sharding::FsdpGradOp: {
        // SHARD_GRAD_OP keeps the weights gathered from forward to backward:
        // one all-gather a micro-batch instead of two.
        const double gathers = ctx.in.sharding == Sharding::FsdpGradOp ? 1 : 2;
        w.micro = ring * (gathers * P + G) / bw;
        w.collectivesMicro = (gathers + 1) * L;
        w.windowMicro = computeMicro;
        w.edgesMicro = layerEdges;
        c.pattern = gathers == 1
            ? "one all-gather of weights + reduce-scatter of gradients every micro-batch, "
              "prefetched under compute"
            : "all-gather of weights in forward and backward + reduce-scatter of gradients, "
              "every micro-batch, prefetched under compute";
        break;
    }
    case Sharding::FsdpHybrid: {
        const double g = ctx.gpusPerNode;
        const double ringG = g > 1 ? (g - 1) / g : 0;
        const double ringN = ctx.nodes > 1 ? (ctx.nodes - 1.0) / ctx.nodes : 0;
        w.micro = ringG * (2 * P + G) / link.intraBytesPerSecond
            + (ctx.nodes > 1 ? 2 * ringN * (G / g) / link.interBytesPerSecond : 0);
        w.collectivesMicro = 3 * L + (ctx.nodes > 1 ? L : 0);
        w.windowMicro = computeMicro;
        w.edgesMicro = ringG * (P + G) / L / link.intraBytesPerSecond;
        c.pattern = "FULL_SHARD inside the node + all-reduce of gradient shards across nodes, "
                    "every micro-batch";
        break;
    }
    }
    return w;
}

} // namespace

Links linksOf(const PlanContext& ctx)
{
    Links l;
    l.intraGBps = ctx.vm && ctx.vm->intraLinkGBps > 0 ? ctx.vm->intraLinkGBps : ctx.gpu.linkGBps;
    l.intraBytesPerSecond = l.intraGBps / 2 * 1e9 * kLinkEfficiency;
    if (ctx.vm && ctx.vm->interNodeGbpsPerGpu > 0) {
        l.interKind = InterNodeLink::InfiniBand;
        l.interGbps = ctx.vm->interNodeGbpsPerGpu;
    } else if (ctx.vm && ctx.vm->frontendGbps > 0) {
        l.interKind = InterNodeLink::Ethernet;
        l.interGbps = ctx.vm->frontendGbps / ctx.gpusPerNode;
    } else {
        l.interKind = InterNodeLink::Assumed;
        l.interGbps = kFallbackEthernetGbps / ctx.gpusPerNode;
    }
    l.interBytesPerSecond = l.interGbps / 8 * 1e9 * kLinkEfficiency;
    return l;
}

FlopsPerToken flopsPerToken(const PlanContext& ctx)
{
    const model::ModelSpec& m = ctx.model;
    const double seq = ctx.meanSeqLen;
    FlopsPerToken f;
    // A mixture of experts runs its router and top-k experts per token.
    f.blockMatmul = double(ctx.counts.blockActive);
    f.matmul = f.blockMatmul + double(m.vocabSize) * double(m.hiddenSize);
    // Causal kernels skip the masked half of the score matrix.
    f.context = ctx.attention == Attention::Sdpa ? seq / 2 : seq;
    f.attention = 4 * double(m.numLayers) * double(m.queryDim()) * f.context;
    f.adapters = ctx.lora ? ctx.trainable : 0;
    f.forward = 2 * f.matmul + f.attention + 2 * f.adapters;
    // Frozen matrices need input gradients only; the adapters need both.
    f.backward = ctx.full ? 2 * f.forward : 2 * f.matmul + 2 * f.attention + 4 * f.adapters;
    f.recompute =
        ctx.in.gradientCheckpointing ? 2 * f.blockMatmul + f.attention + 2 * f.adapters : 0;
    f.reference = ctx.dpo ? 2 * f.matmul + f.attention : 0;
    f.total = f.forward + f.backward + f.recompute + f.reference;
    return f;
}

double gradientCommBytes(const PlanContext& ctx)
{
    if (ctx.in.sharding != Sharding::Ddp)
        return ctx.act;
    if (ctx.lora)
        return ctx.adapterBytes;
    return ctx.precision == Precision::Fp32 ? 4 : 2;
}

Communication communication(
    const PlanContext& ctx, const Links& link, double computeMicro, double backwardShare)
{
    Communication c;
    const bool multiNode = ctx.nodes > 1;
    // NCCL runs one ring per NIC, so across nodes a GPU's share of a
    // collective is bounded by its own GPU link or by the node's total
    // network rate, whichever is slower.
    const double nodeNetwork = link.interBytesPerSecond * ctx.gpusPerNode;
    c.bandwidth = !multiNode  ? link.intraBytesPerSecond
        : ctx.gpusPerNode > 1 ? std::min(link.intraBytesPerSecond, nodeNetwork)
                              : nodeNetwork;
    c.gradientBytes = ctx.trainable * gradientCommBytes(ctx);
    c.parameterBytes = (ctx.total - lowBitParams(ctx) + (ctx.lora ? ctx.trainable : 0)) * ctx.act
        + lowBitBytes(ctx);
    if (ctx.world <= 1)
        return c;
    CommWindows w = commWindows(ctx, link, c, computeMicro, backwardShare);
    const double latency = multiNode ? kInterLatency : kIntraLatency;
    w.micro += w.collectivesMicro * latency;
    w.step += w.collectivesStep * latency;
    const double accum = positive(ctx.in.gradAccum);
    c.total = w.micro * accum + w.step + w.afterStep;
    // What overlap can hide is what the compute window leaves, but never
    // the edges.
    const double exposedMicro = std::max(w.edgesMicro, w.micro - w.windowMicro);
    const double exposedStep = std::max(w.edgesStep, w.step - w.windowStep);
    c.edges = w.edgesMicro * accum + w.edgesStep;
    c.exposed = std::max(0.0, exposedMicro) * accum + std::max(0.0, exposedStep) + w.afterStep;
    return c;
}

OptimizerStep optimizerStep(const PlanContext& ctx, const Communication& comm)
{
    OptimizerStep o;
    const double host = ctx.gpu.hostLinkGBps / 2 * 1e9 * kLinkEfficiency;
    o.localTrainable =
        ctx.trainable / (ctx.in.sharding == Sharding::Ddp ? 1.0 : double(ctx.shardGroup));
    if (ctx.in.offload != Offload::None && host > 0) {
        // Gradients down and updated weights up once a step; with parameter
        // offload the weights stream in every micro-batch too.
        double transfer = 2 * o.localTrainable * ctx.act;
        if (ctx.in.offload == Offload::OptimizerAndParams) {
            o.paramsStreamed = true;
            transfer += (2 * comm.parameterBytes + comm.gradientBytes) / double(ctx.shardGroup)
                * positive(ctx.in.gradAccum);
        }
        o.offloadSeconds = transfer / host;
        o.seconds = o.localTrainable * ctx.gpusPerNode / kCpuAdamParamsPerSecond;
    } else if (ctx.gpu.memBandwidthGBps > 0) {
        // Memory-bound: the bytes read and written per local trainable parameter.
        const double masterBytes = ctx.mixed && !ctx.lora ? 4 : 0;
        const double touched = 2 * (masterBytes > 0 ? masterBytes : ctx.act)
            + gradientCommBytes(ctx) + 2 * ctx.optimizerBytes + masterBytes / 2;
        o.seconds = o.localTrainable * touched
            / (ctx.gpu.memBandwidthGBps * 1e9 * kOptimizerBandwidthShare);
    }
    return o;
}

Dataset dataset(const PlanContext& ctx, double tokensPerStep)
{
    const PlanInput& in = ctx.in;
    const double seq = positive(in.seqLen);
    Dataset d;
    if (in.data.measured()) {
        // What the run's micro-batches carry, padding included, is what runs.
        d.tokens = double(in.data.batchTokens) * in.epochs;
        d.meanTokensPerSample = ctx.meanSeqLen * (in.objective == Objective::Dpo ? 2 : 1);
    } else if ((in.packing && in.objective != Objective::Dpo) || in.datasetSamples <= 0) {
        d.tokens = double(in.trainingTokens());
        d.meanTokensPerSample = in.meanTokensPerSample > 0 ? in.meanTokensPerSample : seq;
    } else {
        // Every row padded; a DPO sample is a pair of rows, never packed.
        const double rows = in.objective == Objective::Dpo ? 2 : 1;
        d.tokens = double(in.datasetSamples) * in.epochs * rows * seq;
        d.meanTokensPerSample = rows * seq;
    }
    d.steps = tokensPerStep > 0 ? std::ceil(d.tokens / tokensPerStep) : 0;
    return d;
}

double stragglerFraction(int nodes)
{
    return nodes > 1 ? kNodeStepJitter * std::sqrt(2 * std::log(double(nodes))) : 0;
}

ThroughputNumbers throughputNumbers(const PlanContext& ctx)
{
    ThroughputNumbers n;
    const double accum = positive(ctx.in.gradAccum);
    n.flops = flopsPerToken(ctx);
    // A measured dataset's micro-batch carries its mean; the peak's longest
    // row is for memory only.
    const DataProfile& data = ctx.in.data;
    n.tokensPerMicro = data.measured() ? double(data.batchTokens) / double(data.microBatches)
                                       : ctx.rowsPerMicro * positive(ctx.in.seqLen);
    const double effective = ctx.peakTflops * 1e12 * ctx.utilisation;
    n.computeMicro = effective > 0 ? n.flops.total * n.tokensPerMicro / effective : INFINITY;
    n.computeStep = n.computeMicro * accum;
    const double backwardShare = (n.flops.backward + n.flops.recompute) / n.flops.total;
    n.links = linksOf(ctx);
    n.comm = communication(ctx, n.links, n.computeMicro, backwardShare);
    n.optimizer = optimizerStep(ctx, n.comm);
    const double alone =
        n.computeStep + n.comm.exposed + n.optimizer.offloadSeconds + n.optimizer.seconds;
    n.stragglerSeconds = alone * stragglerFraction(ctx.nodes);
    n.stepSeconds = alone + n.stragglerSeconds;
    n.tokensPerStep = n.tokensPerMicro * accum * ctx.world;
    n.tokensPerSecond =
        n.stepSeconds > 0 && std::isfinite(n.stepSeconds) ? n.tokensPerStep / n.stepSeconds : 0;
    n.data = dataset(ctx, n.tokensPerStep);
    n.samplesPerSecond = n.tokensPerSecond / n.data.meanTokensPerSample;
    n.hours = n.data.steps * n.stepSeconds / 3600.0;
    return n;
}

} // namespace tb::plan::detail
