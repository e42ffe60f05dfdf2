#include "plan/explain.h"
#include "plan/plan_context.h"

#include <algorithm>
#include <cmath>

// Speed, time and cost of one plan. Formulas and sources: docs/PLANNER.md
// ("Throughput"). Compute: FLOPs per token over an achievable fraction of the
// dense peak. Communication: bytes each strategy moves per step over ring
// collectives, hidden behind compute where the strategy overlaps them.
namespace tb::plan::detail {

namespace {

constexpr double kLinkEfficiency = 0.7; // NCCL bus bandwidth vs the link's rate
constexpr double kIntraLatency = 10e-6; // seconds per collective inside a node
constexpr double kInterLatency = 25e-6; // across nodes
constexpr double kCpuAdamParamsPerSecond = 1e9; // per node, DeepSpeed CPU-Adam order of magnitude
constexpr double kFallbackEthernetGbps = 100;
constexpr double kDdpBucketBytes = 25.0 * 1024 * 1024; // bucket_cap_mb=25

constexpr const char* kSrcFlops =
    "Kaplan et al. 2020 (6N per token); PaLM (Chowdhery et al. 2022) App. B attention term";
constexpr const char* kSrcLoraFlops =
    "LoRA (Hu et al. 2021) Sec. 4.2: no weight gradients for frozen matrices";
constexpr const char* kSrcCkpt = "Korthikanti et al. 2022: full recomputation adds one forward";
constexpr const char* kSrcPeak =
    "presets/hardware/gpus.yaml (vendor datasheets via shared/data/azure)";
constexpr const char* kSrcUtil = "assumption per GPU and method (docs/PLANNER.md, Utilisation)";
constexpr const char* kSrcComm = "ring collectives: all-reduce 2(n-1)/n, all-gather and "
                                 "reduce-scatter (n-1)/n (NCCL docs; ZeRO Sec. 7)";
constexpr const char* kSrcOffload = "ZeRO-Offload (Ren et al. 2021); host link from gpus.yaml";
constexpr const char* kSrcCost = "presets/hardware/vms.yaml price (Linux pay-as-you-go)";

Figure& addFigure(const PlanContext& ctx, PlanResult& r, const char* key, const char* label,
    double value, const char* unit, const char* source)
{
    // Sweeps (explain off) read only the headline fields of PlanResult;
    // they get a scratch figure so the call sites stay simple.
    thread_local Figure scratch;
    if (!ctx.explain)
        return scratch;
    Figure& f = r.figures.emplace_back();
    f.key = key;
    f.label = label;
    f.value = value;
    f.unit = unit;
    f.source = source;
    return f;
}

struct Links {
    double intraBytesPerSecond = 0; // per GPU, one direction, achievable
    double interBytesPerSecond = 0;
    std::string intraNote;
    std::string interNote;
};

Links links(const PlanContext& ctx, PlanResult& r)
{
    Links l;
    const double intraGBps =
        ctx.vm && ctx.vm->intraLinkGBps > 0 ? ctx.vm->intraLinkGBps : ctx.gpu.linkGBps;
    l.intraBytesPerSecond = intraGBps / 2 * 1e9 * kLinkEfficiency;
    if (ctx.explain) {
        Line(l.intraNote) << Fixed{intraGBps, 0} << " GB/s both ways -> " << Fixed{intraGBps / 2, 0}
                          << " GB/s each way x " << Fixed{kLinkEfficiency, 1};
    }
    double interGbps = 0;
    if (ctx.vm && ctx.vm->interNodeGbpsPerGpu > 0) {
        interGbps = ctx.vm->interNodeGbpsPerGpu;
        if (ctx.explain)
            Line(l.interNote) << "InfiniBand " << Fixed{interGbps, 0} << " Gb/s per GPU";
    } else if (ctx.vm && ctx.vm->frontendGbps > 0) {
        interGbps = ctx.vm->frontendGbps / ctx.gpusPerNode;
        if (ctx.explain)
            Line(l.interNote) << "no InfiniBand: Ethernet " << Fixed{ctx.vm->frontendGbps, 0}
                              << " Gb/s per VM shared by " << ctx.gpusPerNode << " GPUs";
        if (ctx.nodes > 1)
            r.warnings.push_back("multi-node over Ethernet: this VM size has no InfiniBand");
    } else {
        interGbps = kFallbackEthernetGbps / ctx.gpusPerNode;
        if (ctx.explain)
            Line(l.interNote) << "no network known: assumed " << Fixed{kFallbackEthernetGbps, 0}
                              << " Gb/s per node";
        if (ctx.nodes > 1)
            r.warnings.push_back(
                "inter-node bandwidth unknown for this hardware: assumed 100 Gb/s per node");
    }
    l.interBytesPerSecond = interGbps / 8 * 1e9 * kLinkEfficiency;
    return l;
}

} // namespace

void computeThroughput(const PlanContext& ctx, PlanResult& r)
{
    const model::ModelSpec& m = ctx.model;
    const PlanInput& in = ctx.in;
    const double L = double(m.numLayers);
    const double seq = double(std::max(1, in.seqLen));
    const double micro = double(std::max(1, in.microBatch));
    const double accum = double(std::max(1, in.gradAccum));
    const double W = ctx.world;

    // FLOPs per token
    const double blockMatmul = double(ctx.counts.blockLinear);
    const double headMatmul = double(m.vocabSize) * double(m.hiddenSize);
    const double nMatmul = blockMatmul + headMatmul;
    const double context =
        in.attention == Attention::Sdpa ? seq / 2 : seq; // causal kernels skip the masked half
    const double attention = 4 * L * double(m.queryDim()) * context;
    const double adapters = ctx.lora ? ctx.trainable : 0;
    const double forward = 2 * nMatmul + attention + 2 * adapters;
    double backward = 0;
    if (ctx.full)
        backward = 2 * forward;
    else
        backward = 2 * nMatmul + 2 * attention
            + 4 * adapters; // input gradients only, plus the adapters' own
    const double recompute =
        in.gradientCheckpointing ? 2 * blockMatmul + attention + 2 * adapters : 0;
    const double flopsPerToken = forward + backward + recompute;
    r.flopsPerToken = flopsPerToken;
    {
        Figure& f = addFigure(ctx, r, "flops_per_token", "FLOPs per token", flopsPerToken, "FLOP",
            ctx.full ? kSrcFlops : kSrcLoraFlops);
        if (ctx.explain) {
            Line l(f.explanation);
            if (ctx.full)
                l << "6 x " << Count{nMatmul} << " matmul params";
            else
                l << "4 x " << Count{nMatmul}
                  << " frozen matmul params (forward + input gradients) + 6 x " << Count{adapters}
                  << " adapter params";
            l << " + 3 x attention 4 x " << int(L) << " layers x " << int(m.queryDim()) << " x "
              << Fixed{context, 0}
              << (in.attention == Attention::Sdpa ? " (causal s/2)" : " (eager: full s)");
            if (recompute > 0) {
                l << " + recomputed forward " << Count{recompute};
                f.source += "; ";
                f.source += kSrcCkpt;
            }
            l << " = " << Count{flopsPerToken};
        }
    }

    const double peak = ctx.peakTflops * 1e12;
    {
        Figure& f =
            addFigure(ctx, r, "peak_tflops", "Dense peak", ctx.peakTflops, "TFLOP/s", kSrcPeak);
        if (ctx.explain)
            Line(f.explanation) << ctx.gpu.id << " " << ctx.peakName << ": "
                                << Fixed{ctx.peakTflops, 1} << " TFLOP/s";
    }
    if (ctx.bf16Emulated)
        r.warnings.push_back(ctx.gpu.id
            + " has no bf16 tensor cores: bf16 runs emulated at fp32 speed; "
              "choose fp16-mixed");
    {
        Figure& f = addFigure(
            ctx, r, "utilisation", "Achievable utilisation", ctx.utilisation, "", kSrcUtil);
        if (ctx.explain)
            Line(f.explanation) << (in.utilisationOverride > 0 ? "given" : "preset for ")
                                << (in.utilisationOverride > 0 ? "" : ctx.gpu.id)
                                << (in.utilisationOverride > 0 ? ""
                                                               : (ctx.full         ? ", full"
                                                                       : ctx.qlora ? ", QLoRA"
                                                                                   : ", LoRA"))
                                << ": " << Fixed{ctx.utilisation * 100, 0} << "% of dense peak"
                                << (ctx.qlora ? " (NF4 dequantisation costs time)" : "");
    }
    const double effective = peak * ctx.utilisation;
    const double tokensPerMicro = micro * seq;
    const double computeMicro =
        effective > 0 ? flopsPerToken * tokensPerMicro / effective : INFINITY;
    const double backwardShare = (backward + recompute) / flopsPerToken;
    if (effective <= 0)
        r.warnings.push_back(
            "no peak figure is known for " + ctx.gpu.id + ": throughput cannot be planned");

    // Communication per GPU
    const Links link = links(ctx, r);
    const double a = ctx.act;
    const Sharding s = in.sharding;
    const bool multiNode = ctx.nodes > 1;
    // NCCL runs one ring per NIC, so across nodes a GPU's share of a
    // collective is bounded by its own GPU link or by the node's total
    // network rate, whichever is slower.
    const double nodeNetwork = link.interBytesPerSecond * ctx.gpusPerNode;
    const double bw = !multiNode ? link.intraBytesPerSecond
        : ctx.gpusPerNode > 1    ? std::min(link.intraBytesPerSecond, nodeNetwork)
                                 : nodeNetwork;
    const double latency = multiNode ? kInterLatency : kIntraLatency;
    const double gradBytesPerParam = s == Sharding::Ddp
        ? (ctx.lora && ctx.mixed ? 4 : (ctx.precision == Precision::Fp32 ? 4 : 2))
        : a;
    const double G = ctx.trainable * gradBytesPerParam;
    const double P = (ctx.total - ctx.quantized + (ctx.lora ? ctx.trainable : 0)) * a
        + ctx.quantized * kNf4BytesPerParam;
    const double ringW = W > 1 ? (W - 1) / W : 0;
    double commMicro = 0, windowMicro = 0, commStep = 0, windowStep = 0, exposedStepOnly = 0;
    double collectivesMicro = 0, collectivesStep = 0;
    const char* pattern = "one GPU: no communication";
    if (W > 1) {
        switch (s) {
        case Sharding::Ddp:
            commStep = 2 * ringW * G / bw;
            collectivesStep = std::ceil(G / kDdpBucketBytes);
            windowStep = computeMicro * backwardShare;
            pattern = "all-reduce of gradients once per step, overlapped with the last backward";
            break;
        case Sharding::Zero1:
            commStep = ringW * G / bw;
            collectivesStep = std::ceil(G / kDdpBucketBytes);
            windowStep = computeMicro * backwardShare;
            exposedStepOnly = ringW * ctx.trainable * a / bw;
            pattern = "reduce-scatter of gradients per step (overlapped) + all-gather of updated "
                      "weights after the step";
            break;
        case Sharding::Zero2:
            commMicro = ringW * G / bw;
            collectivesMicro = std::ceil(G / kDdpBucketBytes);
            windowMicro = computeMicro * backwardShare;
            exposedStepOnly = ringW * ctx.trainable * a / bw;
            pattern = "reduce-scatter of gradients every micro-batch (overlapped) + all-gather of "
                      "updated weights after the step";
            break;
        case Sharding::Zero3:
        case Sharding::FsdpFull:
            commMicro = ringW * (2 * P + G) / bw;
            collectivesMicro = 3 * L;
            windowMicro = computeMicro;
            pattern = "all-gather of weights in forward and backward + reduce-scatter of "
                      "gradients, every micro-batch, prefetched under compute";
            break;
        case Sharding::FsdpGradOp:
            commMicro = ringW * (P + G) / bw;
            collectivesMicro = 2 * L;
            windowMicro = computeMicro;
            pattern = "one all-gather of weights + reduce-scatter of gradients every micro-batch, "
                      "prefetched under compute";
            break;
        case Sharding::FsdpHybrid: {
            const double g = ctx.gpusPerNode;
            const double ringG = g > 1 ? (g - 1) / g : 0;
            const double ringN = ctx.nodes > 1 ? (ctx.nodes - 1.0) / ctx.nodes : 0;
            commMicro = ringG * (2 * P + G) / link.intraBytesPerSecond
                + (ctx.nodes > 1 ? 2 * ringN * (G / g) / link.interBytesPerSecond : 0);
            collectivesMicro = 3 * L + (ctx.nodes > 1 ? L : 0);
            windowMicro = computeMicro;
            pattern = "FULL_SHARD inside the node + all-reduce of gradient shards across nodes, "
                      "every micro-batch";
            break;
        }
        }
    }
    commMicro += collectivesMicro * latency;
    commStep += collectivesStep * latency;
    const double exposedMicro = std::max(0.0, commMicro - windowMicro);
    const double exposedStep = std::max(0.0, commStep - windowStep) + exposedStepOnly;
    const double commTotal = commMicro * accum + commStep + exposedStepOnly;
    const double exposedTotal = exposedMicro * accum + exposedStep;

    // Offload traffic and the optimizer step
    const double host = ctx.gpu.hostLinkGBps / 2 * 1e9 * kLinkEfficiency;
    const double localTrainable =
        ctx.trainable / (s == Sharding::Ddp ? 1.0 : double(ctx.shardGroup));
    double offloadStep = 0, offloadMicro = 0, optimizerSeconds = 0;
    if (in.offload != Offload::None && host > 0) {
        offloadStep = 2 * localTrainable * a / host; // gradients down, updated weights up
        optimizerSeconds = localTrainable * ctx.gpusPerNode / kCpuAdamParamsPerSecond;
        if (in.offload == Offload::OptimizerAndParams)
            offloadMicro = (2 * P / double(ctx.shardGroup) + G / double(ctx.shardGroup)) / host;
    } else if (ctx.gpu.memBandwidthGBps > 0) {
        const double masterBytes = ctx.mixed && !ctx.lora ? 4 : 0;
        const double touched = 2 * (masterBytes > 0 ? masterBytes : a) + gradBytesPerParam
            + 2 * ctx.optimizerBytes + masterBytes / 2;
        optimizerSeconds = localTrainable * touched / (ctx.gpu.memBandwidthGBps * 1e9 * 0.8);
    }

    const double computeStep = computeMicro * accum;
    const double stepSeconds =
        computeStep + exposedTotal + offloadStep + offloadMicro * accum + optimizerSeconds;
    r.stepSeconds = stepSeconds;
    {
        Figure& f =
            addFigure(ctx, r, "compute_seconds", "Compute per step", computeStep, "s", kSrcFlops);
        if (ctx.explain)
            Line(f.explanation) << Count{flopsPerToken} << " FLOP x " << Count{tokensPerMicro}
                                << " tokens x " << int(accum) << " micro-batches / ("
                                << Fixed{ctx.peakTflops, 1} << " TFLOP/s x "
                                << Fixed{ctx.utilisation, 2} << ") = " << Seconds{computeStep};
    }
    {
        Figure& f =
            addFigure(ctx, r, "comm_seconds", "Communication per step", commTotal, "s", kSrcComm);
        if (ctx.explain) {
            Line l(f.explanation);
            l << pattern;
            if (W > 1) {
                l << "; gradients " << Bytes{G} << ", weights " << Bytes{P} << ", "
                  << Fixed{bw / 1e9, 1} << " GB/s effective per GPU ("
                  << (multiNode && bw < link.intraBytesPerSecond ? link.interNote : link.intraNote);
                if (multiNode)
                    l << "; across " << ctx.nodes << " nodes: min(GPU link, " << ctx.gpusPerNode
                      << " x NIC)";
                l << ")";
                l << " = " << Seconds{commTotal};
            }
        }
    }
    {
        Figure& f = addFigure(ctx, r, "exposed_comm_seconds", "Communication not hidden",
            exposedTotal, "s", kSrcComm);
        if (ctx.explain)
            Line(f.explanation) << "communication beyond the compute it overlaps with: "
                                << Seconds{exposedTotal} << " per step";
    }
    if (in.offload != Offload::None) {
        Figure& f = addFigure(ctx, r, "offload_seconds", "CPU offload transfers",
            offloadStep + offloadMicro * accum, "s", kSrcOffload);
        if (ctx.explain)
            Line(f.explanation) << "PCIe " << Fixed{ctx.gpu.hostLinkGBps, 0}
                                << " GB/s both ways x 0.7 each way: gradients down and weights up"
                                << (offloadMicro > 0
                                           ? ", plus parameters streamed in every micro-batch"
                                           : "")
                                << " = " << Seconds{offloadStep + offloadMicro * accum};
    }
    {
        Figure& f = addFigure(ctx, r, "optimizer_seconds", "Optimizer step", optimizerSeconds, "s",
            in.offload != Offload::None ? kSrcOffload : kSrcPeak);
        if (ctx.explain) {
            Line l(f.explanation);
            if (in.offload != Offload::None)
                l << "CPU update of " << Count{localTrainable * ctx.gpusPerNode}
                  << " params per node at 1e9 params/s (assumption)";
            else
                l << "memory-bound update of " << Count{localTrainable}
                  << " params on the GPU at 80% of " << Fixed{ctx.gpu.memBandwidthGBps, 0}
                  << " GB/s";
            l << " = " << Seconds{optimizerSeconds};
        }
    }
    {
        Figure& f =
            addFigure(ctx, r, "step_seconds", "Step time", stepSeconds, "s", "sum of the above");
        if (ctx.explain)
            Line(f.explanation) << "compute " << Seconds{computeStep} << " + exposed communication "
                                << Seconds{exposedTotal} << " + offload "
                                << Seconds{offloadStep + offloadMicro * accum} << " + optimizer "
                                << Seconds{optimizerSeconds} << " = " << Seconds{stepSeconds};
    }

    const double tokensPerStep = tokensPerMicro * accum * W;
    const double tokensPerSecond =
        stepSeconds > 0 && std::isfinite(stepSeconds) ? tokensPerStep / stepSeconds : 0;
    r.tokensPerSecond = tokensPerSecond;
    {
        Figure& f = addFigure(
            ctx, r, "tokens_per_second", "Tokens/s", tokensPerSecond, "tokens/s", "step_seconds");
        if (ctx.explain)
            Line(f.explanation) << int(micro) << " x " << int(seq) << " tokens x " << int(accum)
                                << " accumulation x " << int(W)
                                << " GPUs = " << Count{tokensPerStep} << " tokens per step / "
                                << Seconds{stepSeconds} << " = " << Count{tokensPerSecond}
                                << " tokens/s";
    }

    // Dataset, time and cost
    double rows = 0, computedTokens = 0;
    if (in.packing || in.datasetSamples <= 0) {
        computedTokens = double(in.trainingTokens());
        rows = computedTokens / seq;
    } else {
        rows = double(in.datasetSamples) * in.epochs;
        computedTokens = rows * seq;
    }
    const double meanTokens =
        in.packing && in.meanTokensPerSample > 0 ? in.meanTokensPerSample : seq;
    r.samplesPerSecond = in.packing ? tokensPerSecond / meanTokens : tokensPerSecond / seq;
    {
        Figure& f = addFigure(ctx, r, "samples_per_second", "Samples/s", r.samplesPerSecond,
            "samples/s", "tokens_per_second");
        if (ctx.explain)
            Line(f.explanation) << Count{tokensPerSecond} << " tokens/s / " << Fixed{meanTokens, 0}
                                << (in.packing ? " mean tokens per sample (packed)"
                                               : " tokens per padded row");
    }
    r.trainingTokens = computedTokens;
    {
        Figure& f = addFigure(
            ctx, r, "training_tokens", "Tokens to train", computedTokens, "tokens", "plan input");
        if (ctx.explain) {
            Line l(f.explanation);
            if (in.packing || in.datasetSamples <= 0) {
                if (in.datasetTokens > 0)
                    l << Count{double(in.datasetTokens)} << " tokens";
                else
                    l << Count{double(in.datasetSamples)} << " samples x "
                      << Fixed{in.meanTokensPerSample, 0} << " mean tokens";
            } else {
                l << Count{double(in.datasetSamples)} << " samples, each padded to " << int(seq)
                  << " tokens";
            }
            l << " x " << Fixed{in.epochs, in.epochs == std::floor(in.epochs) ? 0 : 2}
              << " epochs = " << Count{computedTokens};
        }
    }
    const double steps = tokensPerStep > 0 ? std::ceil(computedTokens / tokensPerStep) : 0;
    r.optimizerSteps = steps;
    {
        Figure& f =
            addFigure(ctx, r, "optimizer_steps", "Optimizer steps", steps, "", "training_tokens");
        if (ctx.explain)
            Line(f.explanation) << Count{computedTokens} << " / " << Count{tokensPerStep}
                                << " tokens per step, rounded up";
    }
    r.hours = steps * stepSeconds / 3600.0;
    {
        Figure& f = addFigure(ctx, r, "hours", "Wall-clock time", r.hours, "h", "step_seconds");
        if (ctx.explain)
            Line(f.explanation) << Count{steps} << " steps x " << Seconds{stepSeconds} << " = "
                                << Fixed{r.hours, 2} << " h";
    }
    if (ctx.vm && ctx.vm->usdPerHour) {
        r.costKnown = true;
        r.costUsd = r.hours * ctx.nodes * *ctx.vm->usdPerHour;
        Figure& f = addFigure(ctx, r, "cost_usd", "Cost", r.costUsd, "USD", kSrcCost);
        if (ctx.explain)
            Line(f.explanation) << Fixed{r.hours, 2} << " h x " << ctx.nodes << " x "
                                << ctx.vm->name << " at $" << Fixed{*ctx.vm->usdPerHour, 3}
                                << "/h (" << ctx.vm->priceRegion << ", " << ctx.vm->priceSource
                                << ", as of " << ctx.vm->priceAsOf << ") = $"
                                << Fixed{r.costUsd, 2};
    } else {
        r.costKnown = false;
        if (ctx.vm)
            r.warnings.push_back("no price is known for " + ctx.vm->name + ": cost not computed");
    }
}

} // namespace tb::plan::detail
