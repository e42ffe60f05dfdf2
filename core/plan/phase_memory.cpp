#include "plan/explain.h"
#include "plan/memory_parts.h"

#include "common/units.h"

#include <algorithm>

// What Tunebench's trainer holds per rank, beyond the states every phase
// keeps, while it loads the model (train/training_session.cpp), writes a
// checkpoint (train/checkpoint.cpp) and exports (train/merged_export.cpp).
// docs/PLANNER.md, 4.11.
namespace tb::plan::detail {

namespace {

// Components that live from loading to the end of the run: the states and
// the process (or CUDA context); the rest exists only inside a step.
bool persists(const MemoryComponent& c)
{
    if (c.key == "weights_full") // SHARD_GRAD_OP's copy, gathered for a step
        return false;
    switch (c.category) {
    case MemoryCategory::Weights:
    case MemoryCategory::Gradients:
    case MemoryCategory::Optimizer:
        return true;
    case MemoryCategory::Overhead:
        return c.key != "allocator_slack";
    default:
        return false;
    }
}

struct Persistent {
    double tensors = 0;
    double process = 0; // the process and LibTorch, or the CUDA context and NCCL
    double total() const { return tensors + process; }
};

Persistent persistentOf(const PlanResult& r)
{
    Persistent p;
    for (const MemoryComponent& c : r.memory)
        if (persists(c))
            (c.category == MemoryCategory::Overhead ? p.process : p.tensors) += c.bytes;
    return p;
}

// ZeRO-3 and FSDP over more than one GPU load each rank's slices only.
bool loadsSharded(const PlanContext& ctx, Sharding s)
{
    return ctx.shardGroup > 1 && (s == Sharding::Zero3 || isFsdp(s));
}

// The trainer's units: a decoder layer, the embedding, the head.
double largestUnitParams(const PlanContext& ctx)
{
    return std::max({double(ctx.counts.perLayer) + ctx.loraPerLayer, double(ctx.counts.embedding),
        double(ctx.counts.lmHead + ctx.counts.finalNorm)});
}

double largestLinearParams(const PlanContext& ctx)
{
    model::LinearShape shapes[model::kMaxBlockLinears];
    const int n = model::blockLinearShapes(ctx.model, shapes);
    double largest = 0;
    for (int i = 0; i < n; ++i)
        largest = std::max(largest, double(shapes[i].inFeatures * shapes[i].outFeatures));
    return largest;
}

// Unless the run is fp32, the model is read at fp32 and converted: the copy
// in the compute dtype is made beside it (QLoRA quantises from it).
bool convertsOnLoad(const PlanContext& ctx)
{
    return ctx.precision != Precision::Fp32 || ctx.qlora;
}

// Bytes per element of the checkpoint's files and of the merged export: the
// checkpoint's torch_dtype; a preset does not say it, and published
// checkpoints store 16-bit.
double storedBytesPerParam(const PlanContext& ctx)
{
    return ctx.model.torchDtype == "float32" ? 4 : 2;
}

// A rank on a GPU reads each slice through a host buffer the size of the
// slice: at most the largest tensor's share.
double sliceStagingBytes(const PlanContext& ctx)
{
    const double largest = std::max(
        {double(ctx.counts.embedding), double(ctx.counts.lmHead), largestLinearParams(ctx)});
    return storedBytesPerParam(ctx) * largest / ctx.shardGroup;
}

// What a sharded rank holds on the host while it reads: QLoRA quantises a
// projection from its whole fp32 weight.
double quantisingBytes(const PlanContext& ctx)
{
    return 4 * largestLinearParams(ctx);
}

PhasePeak loadPhase(const PlanContext& ctx, const Persistent& kept, Sharding s)
{
    PhasePeak p{Phase::Load, kept.total(), {}};
    if (loadsSharded(ctx, s)) {
        // On GPUs the reading happens on the host (hostWhileLoading). On CPU
        // ranks a slice's buffer lives while that slice is read, before the
        // shards that follow it exist: measured, it never adds to the peak
        // (docs/DISTRIBUTED_BENCHMARKS.md); QLoRA's fp32 projection does.
        const double read = ctx.gpu.isCpu && ctx.qlora ? quantisingBytes(ctx) : 0;
        p.bytes += read;
        if (ctx.explain)
            Line(p.explanation) << "each rank reads its slices into its shards"
                                << (read > 0 ? ", a projection whole at fp32 to quantise: + " : "")
                                << (read > 0 ? common::formatBytes(read) : std::string());
        return p;
    }
    // Unsharded, the model is read whole at fp32 and converted on the host:
    // the compute-dtype copy exists beside it until the states are built
    // from it. On a CPU that host is the rank's own memory.
    const bool converts = convertsOnLoad(ctx);
    if (!ctx.gpu.isCpu || !converts) {
        if (ctx.explain)
            p.explanation = ctx.gpu.isCpu
                ? "the fp32 model read whole becomes the training states in place"
                : "the model arrives once in its compute dtype and becomes the training states";
        return p;
    }
    // A full fine-tune copies the copy into flat states while the copy is
    // still referenced; under LoRA the copy's frozen weights are the states
    // (QLoRA quantises its projections first), so the copy is counted once.
    const double base = 4 * ctx.total;
    const double copy = ctx.act * ctx.total;
    const double extra = ctx.lora ? std::max(base + copy - kept.tensors, base) : base + copy;
    p.bytes += extra;
    if (ctx.explain)
        Line(p.explanation) << "the model read whole at fp32 (" << Bytes{base} << ") and its "
                            << ctx.actName << " copy (" << Bytes{copy}
                            << ") stay while the states are built: + " << Bytes{extra};
    return p;
}

PhasePeak checkpointPhase(const PlanContext& ctx, const Persistent& kept)
{
    // States are written from their buffers; LoRA gathers the adapter's
    // values for the adapter file beside them.
    const double adapter = ctx.lora ? ctx.trainable * 4 : 0;
    PhasePeak p{Phase::Checkpoint, kept.total() + adapter, {}};
    if (ctx.explain)
        p.explanation = adapter > 0
            ? "states written from their buffers, + the adapter's fp32 values "
                + common::formatBytes(adapter)
            : "states written from their buffers";
    return p;
}

PhasePeak exportPhase(const PlanContext& ctx, const Persistent& kept, Sharding s)
{
    const double file = storedBytesPerParam(ctx);
    // One tensor at a time: a LoRA projection merged at fp32 (its base,
    // B x A, the scaled sum) or a parameter, then its copy in the file's dtype.
    const double merge = ctx.lora ? largestLinearParams(ctx) * (12 + file) : 0;
    // A parameter is written from the master (mixed full fine-tune) or from
    // the weights in the compute dtype; another dtype in the file is a copy.
    const double source = ctx.full && ctx.mixed ? 4 : ctx.act;
    const double plain = file != source ? double(ctx.counts.largestLayer) * file : 0;
    const double tensor = std::max(merge, plain);
    // Sharded states are gathered a unit at a time onto rank 0 (Gloo's
    // gather adds its flat copy on CPUs); LoRA's adapter is gathered whole.
    const bool streamed = ctx.world > 1 && s != Sharding::Ddp;
    const double unitBytes = ctx.full ? largestUnitParams(ctx) * 4
                                      : std::max(rootParams(ctx) * ctx.act, layerGatherBytes(ctx));
    const double unit = streamed ? unitBytes * (ctx.gpu.isCpu ? 2 : 1) : 0;
    const double adapter = ctx.lora && ctx.world > 1 ? ctx.trainable * 4 : 0;
    PhasePeak p{Phase::Export, kept.total() + tensor + unit + adapter, {}};
    if (ctx.explain) {
        Line l(p.explanation);
        l << "the states stay";
        if (tensor > 0)
            l << "; + the largest tensor being written " << Bytes{tensor};
        if (unit > 0)
            l << " + one gathered unit " << Bytes{unit};
        if (adapter > 0)
            l << " + the adapter's fp32 values " << Bytes{adapter};
    }
    return p;
}

// Ranks on GPUs read and convert the model on the host: whole at fp32 and
// in its compute dtype unsharded, a slice at a time into their shards.
void hostWhileLoading(const PlanContext& ctx, PlanResult& r, Sharding s)
{
    if (ctx.gpu.isCpu)
        return;
    const bool sharded = loadsSharded(ctx, s);
    const bool converts = convertsOnLoad(ctx);
    const double perRank = sharded ? (ctx.qlora ? quantisingBytes(ctx) : sliceStagingBytes(ctx))
                                   : 4 * ctx.total + (converts ? ctx.act * ctx.total : 0);
    r.loadHostBytesPerNode = perRank * ctx.gpusPerNode;
    if (ctx.explain)
        Line(r.loadHostExplanation) << (!sharded ? "each rank reads the whole model at fp32"
                : ctx.qlora
                ? "each rank quantises its projections from their fp32 weights, one at a time"
                : "each rank reads its slices through a host buffer, the largest slice")
                                    << (!sharded && converts ? " and makes its compute-dtype copy"
                                                             : "")
                                    << ", " << Bytes{perRank} << " x " << ctx.gpusPerNode
                                    << " ranks per node = " << Bytes{r.loadHostBytesPerNode};
}

// The Hugging Face Trainer's evaluation (prediction_step): the optimizer
// step's zero_grad(set_to_none) has freed the gradients, and a forward
// without grad over eval_batch rows peaks at transformers' loss: the logits
// (the stream's dtype, 16 bits under autocast), their fp32 upcast (none when
// already fp32) and log-softmax's fp32 output, beside what the model's output
// holds: the final hidden states and, as the config's use_cache is on in eval
// mode, every layer's keys and values (in the projections' dtype: QLoRA's
// 4-bit layers return their fp32 input's, autocast or not).
PhasePeak evaluationPhase(const PlanContext& ctx, const PlanResult& r, double outside)
{
    double kept = 0;
    for (const MemoryComponent& c : r.memory)
        if (persists(c) && c.category != MemoryCategory::Gradients
            && c.category != MemoryCategory::Overhead)
            kept += c.bytes;
    const double tokens = double(ctx.in.evalBatch) * ctx.peakSeqLen;
    const double logitBytes = ctx.autocast ? 2 : ctx.streamBytes;
    const double perLogit = logitBytes + (logitBytes == 4 ? 0 : 4) + 4;
    const double logits = tokens * double(ctx.model.vocabSize) * perLogit;
    const double hidden = tokens * double(ctx.model.hiddenSize) * ctx.streamBytes;
    const double kvBytes = ctx.autocast && !ctx.qlora ? 2 : ctx.streamBytes;
    const double cache =
        2 * double(ctx.model.numLayers) * tokens * double(ctx.model.kvDim()) * kvBytes;
    PhasePeak p{Phase::Evaluation, 0, {}};
    p.allocated = kept + logits + hidden + cache;
    p.bytes = p.allocated + outside;
    if (ctx.explain)
        Line(p.explanation) << "weights and optimizer states " << Bytes{kept}
                            << " (gradients freed) + eval_batch " << ctx.in.evalBatch << " x "
                            << Count{ctx.peakSeqLen} << " tokens x "
                            << Count{double(ctx.model.vocabSize)} << " vocab x ("
                            << Fixed{logitBytes, 0} << " B logits"
                            << (logitBytes == 4 ? "" : " + 4 B fp32 upcast")
                            << " + 4 B log-softmax) = " << Bytes{logits}
                            << " + the final hidden states " << Bytes{hidden}
                            << " + the KV cache (use_cache), 2 x " << int(ctx.model.numLayers)
                            << " layers x " << Fixed{kvBytes, 0} << " B = " << Bytes{cache};
    return p;
}

// A checkpoint holds every rank's master and AdamW moments (in the master's
// dtype: bf16 under pure bf16, else fp32), and LoRA's adapter file; the
// export the merged model in the checkpoint's dtype, and the adapter in fp32.
void diskWrites(const PlanContext& ctx, PlanResult& r)
{
    const double master = ctx.precision == Precision::Bf16 ? 2 : 4;
    const double adapter = ctx.lora ? 4 * ctx.trainable : 0;
    r.checkpointDiskBytes = 3 * master * ctx.trainable + adapter;
    r.exportDiskBytes = storedBytesPerParam(ctx) * ctx.total + adapter;
    if (ctx.explain) {
        Line l(r.diskExplanation);
        l << "a checkpoint: master and two AdamW moments, 3 x " << Fixed{master, 0} << " B x "
          << Count{ctx.trainable} << " trainable";
        if (adapter > 0)
            l << " + the adapter " << Bytes{adapter};
        l << " = " << Bytes{r.checkpointDiskBytes} << "; the export: the merged model, "
          << Count{ctx.total} << " x " << Fixed{storedBytesPerParam(ctx), 0} << " B"
          << (ctx.model.torchDtype.empty() ? " (16-bit, as published checkpoints store)" : "");
        if (adapter > 0)
            l << " + the adapter " << Bytes{adapter};
        l << " = " << Bytes{r.exportDiskBytes};
    }
}

} // namespace

void addPhases(const PlanContext& ctx, PlanResult& r, Sharding planned, double allGradients)
{
    r.peaks = peaksOf(r.memory);
    r.phases.clear();
    PhasePeak step{Phase::Step, r.peaks.deviceUsed, {}, r.peaks.allocated};
    if (ctx.explain)
        step.explanation = "the components above";
    const Persistent kept = persistentOf(r);
    const double outside = r.peaks.deviceUsed - r.peaks.reserved;
    PhasePeak optimizer = optimizerStepPhase(ctx, r, kept.total(), allGradients, outside);
    if (ctx.in.engine != Engine::Tunebench) {
        r.phases.push_back(std::move(step));
        r.phases.push_back(std::move(optimizer));
        if (ctx.in.evalBatch > 0)
            r.phases.push_back(evaluationPhase(ctx, r, outside));
        return;
    }
    r.phases.push_back(loadPhase(ctx, kept, planned));
    r.phases.push_back(std::move(step));
    r.phases.push_back(std::move(optimizer));
    r.phases.push_back(checkpointPhase(ctx, kept));
    r.phases.push_back(exportPhase(ctx, kept, planned));
    for (PhasePeak& p : r.phases)
        if (p.phase != Phase::Step && p.phase != Phase::OptimizerStep)
            p.allocated = p.bytes - outside;
    hostWhileLoading(ctx, r, planned);
    diskWrites(ctx, r);
}

} // namespace tb::plan::detail
