#include "plan/explain.h"
#include "plan/throughput_math.h"

#include "common/units.h"

#include <cmath>

// The plan's speed, time and cost figures: the numbers from
// throughput_math.cpp, each with its explanation (the formula with the
// numbers put in) and source. No arithmetic of the model lives here.
namespace tb::plan::detail {

namespace {

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
constexpr const char* kSrcStraggler =
    "expected maximum of n normal variables, mu + sigma sqrt(2 ln n); spread an assumption "
    "(docs/PLANNER.md 5.3)";
constexpr const char* kSrcCost = "presets/hardware/vms.yaml price (Linux pay-as-you-go)";

struct FigureWriter {
    const PlanContext& ctx;
    PlanResult& r;

    std::string& add(
        const char* key, const char* label, double value, const char* unit, std::string source)
    {
        Figure& f = r.figures.emplace_back();
        f.key = key;
        f.label = label;
        f.value = value;
        f.unit = unit;
        f.source = std::move(source);
        return f.explanation;
    }
};

void warnAboutLinks(const PlanContext& ctx, const Links& links, PlanResult& r)
{
    if (ctx.nodes <= 1)
        return;
    if (links.interKind == InterNodeLink::Ethernet)
        r.warnings.push_back("multi-node over Ethernet: this VM size has no InfiniBand");
    else if (links.interKind == InterNodeLink::Assumed)
        r.warnings.push_back(
            "inter-node bandwidth unknown for this hardware: assumed 100 Gb/s per node");
}

void warnAboutSpeed(const PlanContext& ctx, PlanResult& r)
{
    if (ctx.dpo && ctx.in.packing && !ctx.in.data.measured())
        r.warnings.push_back("objective dpo: packing does not apply, each pair is planned as "
                             "two rows padded to seq_len (the trainer never packs pairs)");
    if (ctx.bf16Emulated)
        r.warnings.push_back(ctx.gpu.id
            + " has no bf16 tensor cores: bf16 runs emulated at fp32 speed; choose fp16-mixed");
    if (ctx.peakTflops * ctx.utilisation <= 0)
        r.warnings.push_back(
            "no peak figure is known for " + ctx.gpu.id + ": throughput cannot be planned");
}

std::string linkNote(const PlanContext& ctx, const Links& l, bool interNode)
{
    std::string note;
    Line line(note);
    if (!interNode)
        line << Fixed{l.intraGBps, 0} << " GB/s both ways -> " << Fixed{l.intraGBps / 2, 0}
             << " GB/s each way x " << Fixed{kLinkEfficiency, 1};
    else if (l.interKind == InterNodeLink::InfiniBand)
        line << "InfiniBand " << Fixed{l.interGbps, 0} << " Gb/s per GPU";
    else if (l.interKind == InterNodeLink::Ethernet)
        line << "no InfiniBand: Ethernet " << Fixed{ctx.vm->frontendGbps, 0}
             << " Gb/s per VM shared by " << ctx.gpusPerNode << " GPUs";
    else
        line << "no network known: assumed " << Fixed{kFallbackEthernetGbps, 0} << " Gb/s per node";
    return note;
}

void explainFlops(FigureWriter& w, const FlopsPerToken& f)
{
    const PlanContext& ctx = w.ctx;
    std::string source = ctx.full ? kSrcFlops : kSrcLoraFlops;
    if (f.recompute > 0)
        source += std::string("; ") + kSrcCkpt;
    Line l(w.add("flops_per_token", "FLOPs per token", f.total, "FLOP", source));
    if (ctx.full)
        l << "6 x " << Count{f.matmul} << " matmul params";
    else
        l << "4 x " << Count{f.matmul} << " frozen matmul params (forward + input gradients) + 6 x "
          << Count{f.adapters} << " adapter params";
    l << " + 3 x attention 4 x " << int(ctx.model.numLayers) << " layers x "
      << int(ctx.model.queryDim()) << " x " << Fixed{f.context, 0}
      << (ctx.attention == Attention::Sdpa ? " (causal s/2)" : " (eager: full s)");
    if (f.recompute > 0)
        l << " + recomputed forward " << Count{f.recompute};
    if (f.reference > 0)
        l << " + DPO's reference forward (no gradient, adapters off) " << Count{f.reference};
    l << " = " << Count{f.total};
}

void explainDevice(FigureWriter& w)
{
    const PlanContext& ctx = w.ctx;
    Line(w.add("peak_tflops", "Dense peak", ctx.peakTflops, "TFLOP/s", kSrcPeak))
        << ctx.gpu.id << " " << ctx.peakName << ": " << Fixed{ctx.peakTflops, 1} << " TFLOP/s";
    Line l(w.add("utilisation", "Achievable utilisation", ctx.utilisation, "", kSrcUtil));
    if (ctx.in.utilisationOverride > 0)
        l << "given";
    else
        l << "preset for " << ctx.gpu.id
          << (ctx.full           ? ", full"
                     : ctx.qlora ? ", QLoRA"
                                 : ", LoRA");
    l << ": " << Fixed{ctx.utilisation * 100, 0} << "% of dense peak"
      << (ctx.qlora ? " (NF4 dequantisation costs time)" : "");
}

void explainCompute(FigureWriter& w, const ThroughputNumbers& n)
{
    const PlanContext& ctx = w.ctx;
    Line(w.add("compute_seconds", "Compute per step", n.computeStep, "s", kSrcFlops))
        << Count{n.flops.total} << " FLOP x " << Count{n.tokensPerMicro} << " tokens x "
        << ctx.in.gradAccum << " micro-batches / (" << Fixed{ctx.peakTflops, 1} << " TFLOP/s x "
        << Fixed{ctx.utilisation, 2} << ") = " << Seconds{n.computeStep};
}

void explainCommunication(FigureWriter& w, const ThroughputNumbers& n)
{
    const PlanContext& ctx = w.ctx;
    const Communication& c = n.comm;
    Line l(w.add("comm_seconds", "Communication per step", c.total, "s", kSrcComm));
    l << c.pattern;
    if (ctx.world > 1) {
        const bool multiNode = ctx.nodes > 1;
        l << "; gradients " << Bytes{c.gradientBytes} << ", weights " << Bytes{c.parameterBytes}
          << ", " << Fixed{c.bandwidth / 1e9, 1} << " GB/s effective per GPU ("
          << linkNote(ctx, n.links, multiNode && c.bandwidth < n.links.intraBytesPerSecond);
        if (multiNode)
            l << "; across " << ctx.nodes << " nodes: min(GPU link, " << ctx.gpusPerNode
              << " x NIC)";
        l << ") = " << Seconds{c.total};
    }
    Line(w.add("exposed_comm_seconds", "Communication not hidden", c.exposed, "s", kSrcComm))
        << "communication beyond the compute it overlaps with, and never less than what no "
           "overlap hides (first all-gather, last reduce-scatter or bucket: "
        << Seconds{c.edges} << "): " << Seconds{c.exposed} << " per step";
}

void explainOptimizer(FigureWriter& w, const OptimizerStep& o)
{
    const PlanContext& ctx = w.ctx;
    const bool offload = ctx.in.offload != Offload::None;
    if (offload) {
        Line(w.add("offload_seconds", "CPU offload transfers", o.offloadSeconds, "s", kSrcOffload))
            << "PCIe " << Fixed{ctx.gpu.hostLinkGBps, 0}
            << " GB/s both ways x 0.7 each way: gradients down and weights up"
            << (o.paramsStreamed ? ", plus parameters streamed in every micro-batch" : "") << " = "
            << Seconds{o.offloadSeconds};
    }
    Line l(w.add(
        "optimizer_seconds", "Optimizer step", o.seconds, "s", offload ? kSrcOffload : kSrcPeak));
    if (offload)
        l << "CPU update of " << Count{o.localTrainable * ctx.gpusPerNode}
          << " params per node at 1e9 params/s (assumption)";
    else
        l << "memory-bound update of " << Count{o.localTrainable} << " params on the GPU at "
          << Fixed{kOptimizerBandwidthShare * 100, 0} << "% of "
          << Fixed{ctx.gpu.memBandwidthGBps, 0} << " GB/s";
    l << " = " << Seconds{o.seconds};
}

void explainStep(FigureWriter& w, const ThroughputNumbers& n)
{
    const PlanContext& ctx = w.ctx;
    const PlanInput& in = ctx.in;
    if (ctx.nodes > 1)
        Line(w.add("straggler_seconds", "Waiting for the slowest node", n.stragglerSeconds, "s",
            kSrcStraggler))
            << Fixed{kNodeStepJitter * 100, 0} << "% step-time spread per node x sqrt(2 ln "
            << ctx.nodes << " nodes) = " << Fixed{stragglerFraction(ctx.nodes) * 100, 1}
            << "% of the step = " << Seconds{n.stragglerSeconds};
    Line(w.add("step_seconds", "Step time", n.stepSeconds, "s", "sum of the above"))
        << "compute " << Seconds{n.computeStep} << " + exposed communication "
        << Seconds{n.comm.exposed} << " + offload " << Seconds{n.optimizer.offloadSeconds}
        << " + optimizer " << Seconds{n.optimizer.seconds} << " + waiting for the slowest node "
        << Seconds{n.stragglerSeconds} << " = " << Seconds{n.stepSeconds};
    Line(w.add("tokens_per_second", "Tokens/s", n.tokensPerSecond, "tokens/s", "step_seconds"))
        << (in.data.measured()
                   ? "the data's mean micro-batch " + common::formatCount(n.tokensPerMicro)
                   : std::to_string(rowsPerMicroBatch(in)) + " x " + std::to_string(in.seqLen))
        << (ctx.dpo ? " tokens (2 rows a pair)" : " tokens") << " x " << in.gradAccum
        << " accumulation x " << ctx.world << " GPUs = " << Count{n.tokensPerStep}
        << " tokens per step / " << Seconds{n.stepSeconds} << " = " << Count{n.tokensPerSecond}
        << " tokens/s";
    Line(w.add(
        "samples_per_second", "Samples/s", n.samplesPerSecond, "samples/s", "tokens_per_second"))
        << Count{n.tokensPerSecond} << " tokens/s / " << Fixed{n.data.meanTokensPerSample, 0}
        << (ctx.dpo             ? " tokens per pair (two padded rows)"
                   : in.packing ? " mean tokens per sample (packed)"
                                : " tokens per padded row");
}

void explainDataset(FigureWriter& w, const ThroughputNumbers& n)
{
    const PlanInput& in = w.ctx.in;
    {
        Line l(w.add("training_tokens", "Tokens to train", n.data.tokens, "tokens", "plan input"));
        if (in.data.measured())
            l << "the run's data (" << in.data.source << "): " << Count{double(in.data.rows)}
              << " rows of " << Count{double(in.data.tokens)} << " tokens, "
              << Count{double(in.data.batchTokens)} << " with the padding of their "
              << Count{double(in.data.microBatches)} << " micro-batches (longest row "
              << in.data.longestRow << " tokens)";
        else if (w.ctx.dpo && in.datasetSamples > 0)
            l << Count{double(in.datasetSamples)} << " pairs, two rows each padded to " << in.seqLen
              << " tokens";
        else if (!in.packing && in.datasetSamples > 0)
            l << Count{double(in.datasetSamples)} << " samples, each padded to " << in.seqLen
              << " tokens";
        else if (in.datasetTokens > 0)
            l << Count{double(in.datasetTokens)} << " tokens";
        else
            l << Count{double(in.datasetSamples)} << " samples x "
              << Fixed{in.meanTokensPerSample, 0} << " mean tokens";
        l << " x " << Fixed{in.epochs, in.epochs == std::floor(in.epochs) ? 0 : 2}
          << " epochs = " << Count{n.data.tokens};
    }
    Line(w.add("optimizer_steps", "Optimizer steps", n.data.steps, "", "training_tokens")) << Count{
        n.data.tokens} << " / " << Count{n.tokensPerStep} << " tokens per step, rounded up";
    Line(w.add("hours", "Wall-clock time", n.hours, "h", "step_seconds"))
        << Count{n.data.steps} << " steps x " << Seconds{n.stepSeconds} << " = "
        << Fixed{n.hours, 2} << " h";
}

void explainCost(FigureWriter& w)
{
    const PlanContext& ctx = w.ctx;
    const PlanResult& r = w.r;
    Line(w.add("cost_usd", "Cost", r.costUsd, "USD", kSrcCost))
        << Fixed{r.hours, 2} << " h x " << ctx.nodes << " x " << ctx.vm->name << " at $"
        << Fixed{*ctx.vm->usdPerHour, 3} << "/h (" << ctx.vm->priceRegion << ", "
        << ctx.vm->priceSource << ", as of " << ctx.vm->priceAsOf << ") = $" << Fixed{r.costUsd, 2};
}

} // namespace

void computeThroughput(const PlanContext& ctx, PlanResult& r)
{
    const ThroughputNumbers n = throughputNumbers(ctx);
    warnAboutSpeed(ctx, r);
    warnAboutLinks(ctx, n.links, r);
    r.flopsPerToken = n.flops.total;
    r.stepSeconds = n.stepSeconds;
    r.tokensPerSecond = n.tokensPerSecond;
    r.samplesPerSecond = n.samplesPerSecond;
    r.trainingTokens = n.data.tokens;
    r.optimizerSteps = n.data.steps;
    r.hours = n.hours;
    r.costKnown = ctx.vm && ctx.vm->usdPerHour;
    r.costUsd = r.costKnown ? r.hours * ctx.nodes * *ctx.vm->usdPerHour : 0;
    if (ctx.vm && !r.costKnown)
        r.warnings.push_back("no price is known for " + ctx.vm->name + ": cost not computed");
    if (!ctx.explain)
        return;
    FigureWriter w{ctx, r};
    explainFlops(w, n.flops);
    explainDevice(w);
    explainCompute(w, n);
    explainCommunication(w, n);
    explainOptimizer(w, n.optimizer);
    explainStep(w, n);
    explainDataset(w, n);
    if (r.costKnown)
        explainCost(w);
}

} // namespace tb::plan::detail
