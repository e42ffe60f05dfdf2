#include "plan/plan_context.h"

#include "model/family_parts.h"

#include <algorithm>

namespace tb::plan::detail {

void LoraTargets::mark(model::LinearKind kind)
{
    using model::LinearKind;
    switch (kind) {
    case LinearKind::Q:
        q = true;
        break;
    case LinearKind::K:
        k = true;
        break;
    case LinearKind::V:
        v = true;
        break;
    case LinearKind::Qkv:
        q = k = v = true;
        break;
    case LinearKind::O:
        o = true;
        break;
    case LinearKind::Gate:
        gate = true;
        break;
    case LinearKind::Up:
        up = true;
        break;
    case LinearKind::GateUp:
        gate = up = true;
        break;
    case LinearKind::Down:
        down = true;
        break;
    case LinearKind::Router:
        break;
    }
}

bool LoraTargets::has(model::LinearKind kind) const
{
    using model::LinearKind;
    switch (kind) {
    case LinearKind::Q:
        return q;
    case LinearKind::K:
        return k;
    case LinearKind::V:
        return v;
    case LinearKind::Qkv:
        return q;
    case LinearKind::O:
        return o;
    case LinearKind::Gate:
        return gate;
    case LinearKind::Up:
        return up;
    case LinearKind::GateUp:
        return gate;
    case LinearKind::Down:
        return down;
    case LinearKind::Router:
        return false;
    }
    return false;
}

namespace {

// Adafactor keeps a row and a column vector per matrix and a full second
// moment for vectors (no first moment: HF's default beta1=None).
double adafactorStateElements(const PlanContext& ctx)
{
    const model::ModelSpec& m = ctx.model;
    model::LinearShape shapes[model::kMaxBlockLinears];
    const int n = model::blockLinearShapes(m, shapes);
    double perLayer = 0;
    if (ctx.full) {
        for (int i = 0; i < n; ++i)
            perLayer += double(shapes[i].copies)
                * (double(shapes[i].inFeatures + shapes[i].outFeatures)
                    + (shapes[i].bias ? double(shapes[i].outFeatures) : 0));
        perLayer += double(ctx.counts.normsPerLayer);
        if (m.qkNorm)
            perLayer += 2.0 * double(m.headDim);
        double elements = perLayer * double(m.numLayers) + double(m.vocabSize + m.hiddenSize)
            + double(ctx.counts.finalNorm);
        if (!m.tieWordEmbeddings)
            elements += double(m.vocabSize + m.hiddenSize);
        return elements;
    }
    const double r = ctx.in.lora.rank;
    for (int i = 0; i < n; ++i)
        if (shapes[i].adaptable() && ctx.targets.has(shapes[i].kind))
            perLayer += (r + double(shapes[i].inFeatures)) + (double(shapes[i].outFeatures) + r);
    return perLayer * double(m.numLayers);
}

} // namespace

double loraParamsPerLayer(const model::ModelSpec& model, const LoraSettings& lora,
    LoraTargets* targets, std::vector<std::string>* unknown)
{
    model::LinearShape shapes[model::kMaxBlockLinears];
    const int n = model::blockLinearShapes(model, shapes);
    const std::vector<std::string>& wanted = lora.targetModules;
    bool all = wanted.empty();
    for (const std::string& name : wanted)
        all = all || name == "all-linear" || name == "all";
    double perLayer = 0;
    // A name that selects only experts (gate_proj, up_proj, down_proj of a
    // mixture of experts) adapts nothing, as in our trainer
    // (model_spec.h, LinearShape::adaptable).
    for (int i = 0; i < n; ++i) {
        bool selected = all;
        for (const std::string& name : wanted)
            selected = selected || model::targetSelects(name, shapes[i].kind);
        if (!selected || !shapes[i].adaptable())
            continue;
        perLayer += double(lora.rank) * double(shapes[i].inFeatures + shapes[i].outFeatures);
        if (targets)
            targets->mark(shapes[i].kind);
    }
    if (unknown && !all) {
        for (const std::string& name : wanted) {
            bool found = false;
            for (int i = 0; i < n; ++i)
                found = found || model::targetSelects(name, shapes[i].kind);
            if (!found)
                unknown->push_back(name);
        }
    }
    return perLayer;
}

double expertLoraParams(const model::ModelSpec& model, const LoraSettings& lora,
    double* largestLayer, std::vector<std::string>* unknown, ExpertLoraWeights* adapted)
{
    // transformers' names of a layer's expert weights, which peft's
    // target_parameters match by equality or by a "."-separated suffix.
    const auto selects = [](const std::string& target, const std::string& name) {
        return name == target || name.ends_with("." + target);
    };
    const double h = double(model.hiddenSize), f = double(model.expertIntermediateSize);
    const double perWeight[2] = {h + 2 * f, f + h}; // gate_up_proj, down_proj
    const char* weights[2] = {"gate_up_proj", "down_proj"};
    std::vector<bool> found(lora.targetParameters.size(), false);
    double total = 0, largest = 0;
    for (std::int64_t layer = 0; model.isMixtureOfExperts() && layer < model.numLayers; ++layer) {
        double inLayer = 0;
        for (int w = 0; w < 2; ++w) {
            const std::string name =
                "model.layers." + std::to_string(layer) + ".mlp.experts." + weights[w];
            bool selected = false;
            for (size_t t = 0; t < lora.targetParameters.size(); ++t) {
                const bool match = selects(lora.targetParameters[t], name);
                found[t] = found[t] || match;
                selected = selected || match;
            }
            if (selected)
                inLayer += double(lora.rank) * double(model.experts) * perWeight[w];
            if (selected && adapted)
                (w == 0 ? adapted->gateUp : adapted->down) = true;
        }
        total += inLayer;
        largest = std::max(largest, inLayer);
    }
    for (size_t t = 0; unknown && t < found.size(); ++t)
        if (!found[t])
            unknown->push_back(lora.targetParameters[t]);
    if (largestLayer)
        *largestLayer = largest;
    return total;
}

double lowBitParams(const PlanContext& ctx)
{
    return ctx.quantized + ctx.mxfp4;
}

double quantConstantsPerParam(const PlanContext& ctx)
{
    return ctx.in.doubleQuant ? kDoubleQuantConstantsPerParam : kQuantConstantsPerParam;
}

double lowBitBytes(const PlanContext& ctx)
{
    return ctx.quantized * kNf4BytesPerParam + ctx.mxfp4 * model::kMxfp4BitsPerWeight / 8;
}

namespace {

// The experts' weights (not their biases) of every layer, where they stay
// as published in MXFP4 under LoRA; validateForModel refuses them stored
// under a full fine-tune or QLoRA.
double mxfp4ExpertWeights(const PlanContext& ctx)
{
    const model::ModelSpec& model = ctx.model;
    if (!ctx.lora || ctx.qlora || ctx.in.mxfp4Experts != Mxfp4Experts::Stored
        || !model::expertsPublishedInMxfp4(model))
        return 0;
    model::LinearShape shapes[model::kMaxBlockLinears];
    const int n = model::blockLinearShapes(model, shapes);
    double weights = 0;
    for (int i = 0; i < n; ++i)
        if (shapes[i].kind != model::LinearKind::Router
            && !model::isAttentionLinear(shapes[i].kind))
            weights += double(shapes[i].copies) * double(shapes[i].inFeatures)
                * double(shapes[i].outFeatures);
    return weights * double(model.numLayers);
}

// What trains and what stays frozen (and, for QLoRA, quantized).
void countParameters(PlanContext& ctx)
{
    const PlanInput& in = ctx.in;
    const model::ModelSpec& model = ctx.model;
    ctx.counts = model::countParameters(model);
    ctx.full = in.method == Method::Full;
    ctx.lora = !ctx.full;
    ctx.qlora = in.method == Method::Qlora;
    ctx.total = double(ctx.counts.total);
    if (ctx.full) {
        ctx.trainable = ctx.total;
        return;
    }
    ctx.loraPerLayer = loraParamsPerLayer(model, in.lora, &ctx.targets, &ctx.unknownTargets);
    ctx.trainable = ctx.loraPerLayer * double(model.numLayers);
    // The experts' LoRA trains beside attention's: in the largest layer's
    // share (a unit of FSDP and ZeRO-3) and in every trainable count.
    double expertLayer = 0;
    ctx.trainable += expertLoraParams(model, in.lora, &expertLayer, nullptr, &ctx.expertTargets);
    ctx.loraPerLayer += expertLayer;
    if (ctx.qlora) {
        model::LinearShape shapes[model::kMaxBlockLinears];
        const int n = model::blockLinearShapes(model, shapes);
        // The router stays in 16 bits: it is not a projection of the stream.
        double linearWeights = 0;
        for (int i = 0; i < n; ++i)
            if (shapes[i].kind != model::LinearKind::Router)
                linearWeights += double(shapes[i].copies) * double(shapes[i].inFeatures)
                    * double(shapes[i].outFeatures);
        ctx.quantized = linearWeights * double(model.numLayers);
    }
    ctx.mxfp4 = mxfp4ExpertWeights(ctx);
    ctx.frozen16 = ctx.total - ctx.quantized - ctx.mxfp4;
}

// GPUs per node, the world, the group a shard spreads over, the share of a
// GPU (or of this CPU) each rank gets.
void layOut(PlanContext& ctx)
{
    const PlanInput& in = ctx.in;
    const int vmGpus = ctx.vm ? std::max(1, ctx.vm->gpusPerVm) : 1;
    ctx.gpusPerNode = in.gpusPerNode > 0 ? in.gpusPerNode : vmGpus;
    if (ctx.vm)
        ctx.gpusPerNode = std::min(ctx.gpusPerNode, vmGpus);
    ctx.gpusPerNode = std::clamp(ctx.gpusPerNode, 1, 1024);
    ctx.nodes = std::clamp(in.nodes, 1, 4096);
    ctx.world = ctx.gpusPerNode * ctx.nodes;
    if (in.sharding == Sharding::Ddp)
        ctx.shardGroup = 1;
    else if (in.sharding == Sharding::FsdpHybrid)
        ctx.shardGroup = ctx.gpusPerNode;
    else
        ctx.shardGroup = ctx.world;
    ctx.gpuFraction = ctx.vm ? ctx.vm->gpuFraction : 1.0;
    // Ranks on one CPU share its memory and its cores.
    if (ctx.gpu.isCpu)
        ctx.gpuFraction = 1.0 / ctx.gpusPerNode;
}

// Bytes per element of activations, frozen weights and optimizer states.
void sizeElements(PlanContext& ctx)
{
    const Precision p = ctx.in.precision;
    ctx.precision = p;
    ctx.mixed = p == Precision::Bf16Mixed || p == Precision::Fp16Mixed;
    ctx.bf16Emulated =
        (p == Precision::Bf16Mixed || p == Precision::Bf16) && !ctx.gpu.bf16Supported;
    ctx.act = p == Precision::Fp32 ? 4 : 2;
    ctx.actName = p == Precision::Fp32 ? "fp32" : p == Precision::Fp16Mixed ? "fp16" : "bf16";
    ctx.frozenBytes = p == Precision::Fp32 ? 4 : 2;
    ctx.frozenName = ctx.actName;
    ctx.hf = ctx.in.engine == Engine::HfTrainer;
    ctx.autocast = ctx.hf && ctx.mixed;
    // TRL and the peft recipes prepare an unsharded 4-bit model for training:
    // every parameter that is not 4-bit becomes fp32, so the embeddings, and
    // with them the hidden states, are fp32 (4.14). A model FSDP shards is
    // left as loaded, its adapters in the model's dtype (4.18).
    ctx.shardedQlora = ctx.hf && ctx.qlora && isFsdp(ctx.in.sharding);
    ctx.kbitUpcast = ctx.hf && ctx.qlora && !ctx.shardedQlora;
    if (ctx.kbitUpcast) {
        ctx.frozenBytes = 4;
        ctx.frozenName = "fp32";
    }
    ctx.streamBytes = ctx.kbitUpcast ? 4 : ctx.act;
    // peft keeps adapters in fp32 (autocast_adapter_dtype); our trainer and
    // the reference engines keep them in the working dtype unless mixed.
    const bool fp32Adapters = ctx.mixed || (ctx.hf && !ctx.shardedQlora);
    ctx.adapterBytes = ctx.lora && fp32Adapters ? 4 : p == Precision::Fp32 ? 4 : 2;
    const DataProfile& data = ctx.in.data;
    ctx.peakSeqLen = data.measured() ? double(data.longestRow) : double(std::max(1, ctx.in.seqLen));
    ctx.meanSeqLen =
        data.measured() ? double(data.batchTokens) / double(data.rows) : ctx.peakSeqLen;
    ctx.dpo = ctx.in.objective == Objective::Dpo;
    ctx.rowsPerMicro = double(rowsPerMicroBatch(ctx.in));
    ctx.tokensPerMicro = ctx.rowsPerMicro * ctx.peakSeqLen;
    ctx.completionTokens = data.measured() && data.peakLossTokens > 0
        ? std::min(double(data.peakLossTokens), ctx.tokensPerMicro)
        : ctx.tokensPerMicro;
    // AdamW's states take their parameter's dtype; a full fine-tune's are
    // fp32 beside a master copy unless the model trains in pure bf16.
    ctx.optimizerStateBytes = ctx.lora ? ctx.adapterBytes : p == Precision::Bf16 ? 2 : 4;
    switch (ctx.in.optimizer) {
    case Optimizer::AdamW:
        ctx.optimizerBytes = 2 * ctx.optimizerStateBytes;
        break;
    case Optimizer::AdamW8bit:
        // Two 1-byte states plus one fp32 absmax per 2048-element block each.
        ctx.optimizerBytes = 2.0 + 2.0 * 4.0 / 2048.0;
        ctx.optimizerStateBytes = 1;
        break;
    case Optimizer::Sgd:
        ctx.optimizerBytes = ctx.optimizerStateBytes;
        break;
    case Optimizer::Adafactor:
        ctx.optimizerBytes = ctx.trainable > 0
            ? adafactorStateElements(ctx) * ctx.optimizerStateBytes / ctx.trainable
            : 0;
        break;
    }
}

// What runs AdamW's update when the input leaves it to the engine: our
// trainer calls the fused kernel, DeepSpeed's "AdamW" is its FusedAdam, and
// the Hugging Face Trainer's default optim is adamw_torch_fused from PyTorch
// 2.8 on (huggingface/transformers#37358).
void resolveOptimizerKernel(PlanContext& ctx)
{
    if (ctx.in.optimizerKernel != OptimizerKernel::Auto) {
        ctx.optimizerKernel = ctx.in.optimizerKernel;
        ctx.optimizerKernelBy = "as the plan asks";
        return;
    }
    ctx.optimizerKernel = OptimizerKernel::Fused;
    ctx.optimizerKernelBy = ctx.in.engine == Engine::Tunebench ? "Tunebench's trainer"
        : isZero(ctx.in.sharding)
        ? "DeepSpeed's FusedAdam"
        : "the Hugging Face Trainer's default optim (adamw_torch_fused from PyTorch 2.8)";
}

// The dense peak the precision runs at, and the share of it achieved.
void ratePeak(PlanContext& ctx)
{
    const GpuSpec& gpu = ctx.gpu;
    switch (ctx.in.precision) {
    case Precision::Fp32:
        ctx.peakTflops = gpu.fp32Tflops;
        ctx.peakName = "fp32 (TF32 off, PyTorch's default for matmul)";
        break;
    case Precision::Fp16Mixed:
        ctx.peakTflops = gpu.fp16Tflops;
        ctx.peakName = "fp16 tensor-core dense";
        break;
    case Precision::Bf16Mixed:
    case Precision::Bf16:
        ctx.peakTflops = ctx.bf16Emulated ? gpu.fp32Tflops : gpu.bf16Tflops;
        ctx.peakName = ctx.bf16Emulated ? "fp32 (bf16 emulated: no bf16 tensor cores)"
                                        : "bf16 tensor-core dense";
        break;
    }
    if (gpu.isCpu) {
        ctx.peakTflops /= ctx.gpusPerNode;
        ctx.peakName = "fp32 GEMM rate measured on this CPU, per rank";
    }
    if (ctx.in.utilisationOverride > 0)
        ctx.utilisation = ctx.in.utilisationOverride;
    else
        ctx.utilisation = ctx.full ? gpu.utilisation.full
            : ctx.qlora            ? gpu.utilisation.qlora
                                   : gpu.utilisation.lora;
}

void chooseAttention(PlanContext& ctx)
{
    ctx.attention = ctx.in.attention;
    const bool capped = ctx.model.attnLogitSoftcap > 0;
    if (capped && ctx.in.engine == Engine::Tunebench && ctx.attention != Attention::Eager) {
        ctx.attention = Attention::Eager;
        ctx.attentionForcedEager = true;
    }
    ctx.softcappedScores = capped && ctx.attention == Attention::Eager;
}

} // namespace

PlanContext makeContext(const PlanInput& in, const model::ModelSpec& model, const GpuSpec& gpu,
    const VmSize* vm, bool explain)
{
    PlanContext ctx(in, model, gpu, vm, explain);
    countParameters(ctx);
    layOut(ctx);
    sizeElements(ctx);
    resolveOptimizerKernel(ctx);
    ctx.loss = resolvedLoss(ctx.in);
    ratePeak(ctx);
    chooseAttention(ctx);
    return ctx;
}

} // namespace tb::plan::detail
