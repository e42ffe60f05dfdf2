#include "plan/explain.h"
#include "plan/memory_parts.h"

#include <algorithm>

// What DPO holds in a step beyond supervised fine-tuning, as our trainer's
// step runs it (train/dpo_step.cpp, docs/PLANNER.md 4.15): per micro-batch a
// reference forward without gradient and with every adapter disabled, then
// the policy's forward and backward over the same 2 x micro_batch rows. Both
// take log-probabilities of the completion tokens alone: the hidden states
// of those tokens are gathered and only their logits are made, whole (not
// chunk by chunk), then upcast to fp32 for log-softmax.
namespace tb::plan::detail {

namespace {

constexpr const char* kSrcDpo = "train/dpo_step.cpp sequenceLogProbs (docs/PLANNER.md 4.15)";

// Logits of the completion tokens: C x vocab.
double completionLogits(const PlanContext& ctx)
{
    return ctx.completionTokens * double(ctx.model.vocabSize);
}

// The reference pass's logits at their peak: the head's output, its fp32
// copy (none when already fp32) and log-softmax's output, all alive until
// the gather that ends the expression.
double referenceLogitsBytes(const PlanContext& ctx)
{
    const double a = ctx.act;
    return (a + (a == 4 ? 0 : 4) + 4) * completionLogits(ctx);
}

// One decoder layer run without gradient: its input and output stream and
// the tensors it makes on the way, which the saved set of a layer bounds.
double referenceLayerBytes(const PlanContext& ctx, const LayerActivations& layer)
{
    return 2 * ctx.act * ctx.tokensPerMicro * double(ctx.model.hiddenSize) + layer.total();
}

} // namespace

// At log-softmax's backward: its saved fp32 output, the incoming fp32
// gradient and the gradient it produces (12 B a logit; the 16-bit logits
// are freed after the upcast), beside the completion's gathered hidden
// states the head saved for its backward.
double dpoLogitsBytes(const PlanContext& ctx)
{
    const double gathered = ctx.act * ctx.completionTokens * double(ctx.model.hiddenSize);
    return 12 * completionLogits(ctx) + gathered;
}

void addDpoLogits(const PlanContext& ctx, MemoryBuilder& b)
{
    const double bytes = dpoLogitsBytes(ctx);
    auto* c = b.add("logits", MemoryCategory::Logits, "Completion logits (DPO)", bytes, kSrcDpo);
    if (!c || !ctx.explain)
        return;
    Line l(c->explanation);
    l << Count{ctx.completionTokens} << " completion tokens of " << Count{ctx.rowsPerMicro}
      << " rows ("
      << (ctx.in.data.measured() ? "the data's largest micro-batch" : "every token, a bound")
      << ") x " << Count{double(ctx.model.vocabSize)} << " vocab = " << Count{completionLogits(ctx)}
      << " logits, made whole: fp32 log-softmax 4 B + its fp32 incoming and outgoing gradients "
         "4 B + 4 B = 12 B each, + the gathered hidden states "
      << Fixed{ctx.act, 0} << " B x " << Count{ctx.completionTokens} << " x "
      << Count{double(ctx.model.hiddenSize)} << " = " << Bytes{bytes};
}

void addDpoReference(
    const PlanContext& ctx, MemoryBuilder& b, const LayerActivations& layer, double policyTransient)
{
    // The reference's per-row log-probabilities (fp32) stay from its pass to
    // the loss; its transient peak comes and goes before the policy's
    // forward, so only what it exceeds the policy's transients by counts.
    const double logps = 4 * ctx.rowsPerMicro;
    const double logits = referenceLogitsBytes(ctx);
    const double layerPeak = referenceLayerBytes(ctx, layer);
    const double transient = std::max(logits, layerPeak);
    const double beyond = std::max(0.0, transient - policyTransient);
    auto* c = b.add("dpo_reference", MemoryCategory::Activations, "DPO reference forward",
        logps + beyond, kSrcDpo);
    if (!c || !ctx.explain)
        return;
    Line l(c->explanation);
    l << "a forward without gradient, adapters disabled, before the policy's: one layer at a "
         "time (its stream in and out + its tensors "
      << Bytes{layerPeak} << ") or its completion logits ((" << Fixed{ctx.act, 0}
      << (ctx.act == 4 ? "" : " + 4") << " + 4) B x " << Count{completionLogits(ctx)} << " = "
      << Bytes{logits} << "), at most " << Bytes{transient} << " against the policy's "
      << Bytes{policyTransient} << ": + " << Bytes{beyond} << " beyond; its log-probabilities "
      << "4 B x " << Count{ctx.rowsPerMicro} << " rows kept for the loss = " << Bytes{c->bytes};
}

} // namespace tb::plan::detail
