#include "plan/explain.h"
#include "plan/memory_parts.h"
#include "plan/memory_sources.h"

#include "common/units.h"

#include <algorithm>

// Memory that lives for one step: activations (per tensor, for Llama-style
// blocks), attention scores, logits and loss buffers. docs/PLANNER.md, 4.3
// to 4.6.
namespace tb::plan::detail {

// Bytes per score element eager attention keeps for backward: the fp32
// softmax output and, below fp32, its 16-bit copy that P.V reads; with a
// softcap also tanh's output. The scores are in the attention's dtype:
// autocast's 16 bits, or the hidden states' under the Hugging Face Trainer.
double scoreBytesPerElement(const PlanContext& ctx)
{
    const double a = ctx.autocast ? 2 : ctx.hf ? ctx.streamBytes : ctx.act;
    return (a == 4 ? 4 : 4 + a) + (ctx.softcappedScores ? a : 0);
}

// A mixture of experts' MLP as transformers runs it: each token's rows are
// gathered for each of its k experts, which save what a dense gated MLP
// saves at the expert's width; the router's fp32 softmax is saved whole.
// The experts' inputs are saved when their weights train (or bitsandbytes
// keeps them), or when LoRA on an expert weight (lora.target_parameters)
// reads them: our trainer's per-expert update, linear(x, A_e) then
// linear(., B_e) (train/expert_lora.cpp), saves x for A's gradient and A's
// rank-wide output for B's; peft's ParamWrapper adds B A to the weight
// itself, whose matmul then saves x. A layer is planned with every expert weight
// that some layer adapts (an upper bound where the targets name layers).
// The load-balancing loss takes a softmax of the router's logits in their
// own dtype and keeps it; transformers also keeps the logits themselves
// (the model's output) until its loss reads them.
double expertActivations(const PlanContext& ctx, bool savesInputs)
{
    const model::ModelSpec& m = ctx.model;
    const double t = ctx.tokensPerMicro, a = ctx.act, h = double(m.hiddenSize);
    const double k = double(m.expertsPerToken), fe = double(m.expertIntermediateSize);
    const double r = double(ctx.in.lora.rank);
    double bytes = 3 * a * t * k * fe + 4 * t * double(m.experts);
    if (savesInputs)
        bytes += a * t * h + a * t * k * h + a * t * k * fe; // router's, gathered, down's inputs
    const ExpertLoraWeights lora = ctx.lora ? ctx.expertTargets : ExpertLoraWeights{};
    const double low = ctx.hf ? 0 : a * t * k * r; // A's output
    if (lora.gateUp)
        bytes += (savesInputs ? 0 : a * t * k * h) + low; // the gathered input
    if (lora.down)
        bytes += (savesInputs ? 0 : a * t * k * fe) + low; // down_proj's input
    if (ctx.full)
        bytes += a * t * k * h; // each expert's output, times its trainable routing weight
    if (m.outputRouterLogits)
        bytes += (ctx.hf ? 2 : 1) * a * t * double(m.experts);
    return bytes;
}

namespace {

LayerActivations layerActivations(const PlanContext& ctx)
{
    if (ctx.hf)
        return hfLayerActivations(ctx);
    const model::ModelSpec& m = ctx.model;
    const double t = ctx.tokensPerMicro;
    const double a = ctx.act;
    const double h = double(m.hiddenSize), f = double(m.intermediateSize);
    const double qd = double(m.queryDim()), kvd = double(m.kvDim());
    const bool full = ctx.full;
    const bool dropout = ctx.lora && ctx.in.lora.dropout > 0;
    const LoraTargets& tg = ctx.targets;
    LayerActivations act;

    // RMSNorm as transformers runs it: the fp32 upcast of its input and the
    // rsqrt are saved; with a trainable weight also the normalised input.
    const double norm = 4 * t * h + 4 * t + (full ? a * t * h : 0);
    act.norms = norm * m.normsPerLayer;

    // Attention: SDPA saves q, k, v (after RoPE) and its output (o_proj's
    // input); flash kernels add a logsumexp per head and token.
    act.attention = a * t * (qd + 2 * kvd) + a * t * qd;
    if (ctx.attention == Attention::Sdpa)
        act.attention += 4 * t * double(m.numHeads);
    if (m.qkNorm)
        act.attention += (4 + (full ? a : 0)) * t * (qd + kvd);
    // A linear layer's input is saved when its weight trains, or when a LoRA
    // A matrix reads it directly (no dropout). bitsandbytes' 4-bit matmul
    // saves its input for backward even for a frozen weight
    // (MatMul4Bit.forward keeps (A, B)), so QLoRA saves every block input.
    const bool savesInputs = full || ctx.qlora;
    // The norm output feeds q/k/v.
    if (savesInputs || (!dropout && (tg.q || tg.k || tg.v)))
        act.attention += a * t * h;

    if (m.isMixtureOfExperts())
        act.mlp = expertActivations(ctx, savesInputs);
    else if (m.mlp == model::MlpKind::Gated)
        act.mlp = 3 * a * t * f; // gate out (SiLU input), SiLU out, up out (the product's inputs)
    else
        act.mlp = a * t * f; // up out (GELU input)
    if (!m.isMixtureOfExperts() && (savesInputs || (!dropout && (tg.gate || tg.up))))
        act.mlp += a * t * h; // second norm's output, read by gate/up
    if (!m.isMixtureOfExperts() && (savesInputs || (!dropout && tg.down)))
        act.mlp += a * t * f; // down_proj's input

    if (ctx.lora) {
        model::LinearShape shapes[model::kMaxBlockLinears];
        const int n = model::blockLinearShapes(m, shapes);
        for (int i = 0; i < n; ++i) {
            if (!tg.has(shapes[i].kind))
                continue;
            act.lora += a * t * double(ctx.in.lora.rank); // A's output, read by B
            if (dropout)
                act.lora += (a + 1) * t * double(shapes[i].inFeatures); // dropped input + bool mask
        }
    }
    if (ctx.attention == Attention::Eager) {
        const double s = ctx.peakSeqLen;
        act.scores = scoreBytesPerElement(ctx) * double(m.numHeads) * s * s * ctx.rowsPerMicro;
    }
    return act;
}

// The logits and the loss at log-softmax's backward, by how the loss treats
// them.
double logitsBytes(const PlanContext& ctx)
{
    if (ctx.dpo)
        return dpoLogitsBytes(ctx);
    const double a = ctx.act;
    const double tv = ctx.tokensPerMicro * double(ctx.model.vocabSize);
    const double k = std::max(1, ctx.in.lossChunks);
    double logits = 0;
    // The Hugging Face Trainer drops the model's output before backward.
    const double kept = ctx.hf ? 0 : a;
    switch (ctx.loss) {
    case LossMode::FullFp32:
        // At log-softmax's backward: the 16-bit logits (the model output
        // keeps them), the saved fp32 log-probs, the incoming fp32 gradient
        // and the fp32 gradient it produces.
        logits = (kept + 12) * tv;
        break;
    case LossMode::Chunked:
        logits = (a + 4) * tv + 8 * tv / k;
        break;
    case LossMode::Fused:
        logits = (a + 8) * tv / k;
        break;
    case LossMode::Auto:
        break; // resolved in the context
    }
    return logits;
}

// The same, each byte count said as it is summed.
void addLogits(const PlanContext& ctx, MemoryBuilder& b)
{
    if (ctx.dpo)
        return addDpoLogits(ctx, b);
    const double a = ctx.act;
    const double t = ctx.tokensPerMicro;
    const double tv = t * double(ctx.model.vocabSize);
    const double k = std::max(1, ctx.in.lossChunks);
    const double logits = logitsBytes(ctx);
    if (auto* c = b.add("logits", MemoryCategory::Logits, "Logits and loss", logits, kSrcLoss);
        c && ctx.explain) {
        Line l(c->explanation);
        l << Count{t} << " tokens x " << Count{double(ctx.model.vocabSize)}
          << " vocab = " << Count{tv} << " logits; ";
        if (ctx.loss == LossMode::FullFp32 && ctx.hf)
            l << "whole batch upcast, the output dropped before backward (the Trainer's "
                 "compute_loss): fp32 log-softmax 4 B + its fp32 incoming and outgoing "
                 "gradients 4 B + 4 B = 12 B each";
        else if (ctx.loss == LossMode::FullFp32)
            l << Fixed{a, 0} << " B " << ctx.actName
              << " logits kept by the model output + whole batch upcast: fp32 log-softmax 4 B "
                 "+ its fp32 incoming and outgoing gradients 4 B + 4 B = "
              << Fixed{a + 12, 0} << " B each";
        else if (ctx.loss == LossMode::Chunked)
            l << Fixed{a, 0} << " B " << ctx.actName
              << " logits + 4 B fp32 log-probs kept for backward + 8 B fp32 work for 1 of "
              << int(k) << " chunks";
        else
            l << "fused per chunk: (" << Fixed{a, 0} << " + 4 + 4) B for 1 of " << int(k)
              << " chunks, full logits never exist";
        l << " = " << Bytes{logits};
    }
}

} // namespace

void addTransientMemory(const PlanContext& ctx, MemoryBuilder& b)
{
    const double a = ctx.act;
    // Activations
    const LayerActivations layer = layerActivations(ctx);
    const double L = double(ctx.model.numLayers);
    const double t = ctx.tokensPerMicro;
    const double h = double(ctx.model.hiddenSize);
    const double finalNorm = 4 * t * h + 4 * t + (ctx.full ? 2 * a * t * h : 0);
    double activations = 0;
    const double stored = ctx.hf ? ctx.streamBytes : a; // a checkpointed layer's input
    // Under the Hugging Face Trainer the first layer is recomputed after the
    // loss's backward has freed its buffers: only what exceeds them counts.
    const double recomputed =
        ctx.hf ? std::max(0.0, layer.total() - logitsBytes(ctx)) : layer.total();
    if (ctx.in.gradientCheckpointing)
        activations = L * stored * t * h + recomputed + finalNorm;
    else
        activations = L * layer.total() + finalNorm;
    if (auto* c =
            b.add("activations", MemoryCategory::Activations, "Activations", activations, kSrcAct);
        c && ctx.explain) {
        Line l(c->explanation);
        l << "per layer (b x s = " << Count{t} << " tokens"
          << (ctx.in.data.measured() ? ", s the data's longest row" : "") << "): norms "
          << Bytes{layer.norms} << " + attention " << Bytes{layer.attention} << " + MLP "
          << Bytes{layer.mlp};
        if (layer.lora > 0)
            l << " + LoRA " << Bytes{layer.lora};
        l << " = " << Bytes{layer.total()};
        if (ctx.in.gradientCheckpointing)
            l << "; checkpointing: " << int(L) << " layer inputs x " << Bytes{stored * t * h}
              << " + 1 layer recomputed"
              << (ctx.hf ? " (after the loss's buffers are freed: "
                             + common::formatBytes(recomputed) + " beyond them)"
                         : "");
        else
            l << " x " << int(L) << " layers";
        l << " + final norm " << Bytes{finalNorm} << " = " << Bytes{activations};
    }
    if (layer.scores > 0) {
        const double scores = ctx.in.gradientCheckpointing ? layer.scores : L * layer.scores;
        if (auto* c = b.add("attn_scores", MemoryCategory::Activations, "Attention scores (eager)",
                scores, kSrcEager);
            c && ctx.explain)
            Line(c->explanation)
                << "eager attention stores softmax(QK^T)"
                << (ctx.softcappedScores ? " and tanh of the softcapped scores" : "") << ": "
                << int(ctx.model.numHeads) << " heads x " << Count{ctx.peakSeqLen}
                << "^2 x b=" << Count{ctx.rowsPerMicro} << " x "
                << Fixed{scoreBytesPerElement(ctx), 0} << " B = " << Bytes{layer.scores}
                << " per layer"
                << (ctx.in.gradientCheckpointing ? " (one layer at a time)" : " x all layers")
                << (ctx.attentionForcedEager ? "; eager because the model softcaps its attention "
                                               "scores, which no fused kernel of our trainer does"
                                             : "");
    }
    if (auto* c = b.add("autocast_copies", MemoryCategory::Activations,
            "Autocast's 16-bit weight copies", hfAutocastCopies(ctx), kSrcHfTrainer);
        c && ctx.explain)
        Line(c->explanation) << "torch.autocast casts each fp32 weight it multiplies once a "
                                "forward and saves the copy for backward: the adapters"
                             << (ctx.kbitUpcast ? " and the fp32 lm_head" : "")
                             << " x 2 B = " << Bytes{c->bytes};
    addLogits(ctx, b);
    if (ctx.dpo)
        addDpoReference(ctx, b, layer, activations + logitsBytes(ctx));
}

} // namespace tb::plan::detail
