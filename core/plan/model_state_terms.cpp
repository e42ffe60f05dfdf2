#include "plan/model_state_terms.h"

#include "plan/explain.h"
#include "plan/memory_sources.h"

#include "model/family_parts.h"

#include <cmath>
#include <optional>
#include <string>

// The model states' components (weights, master, gradients, optimizer
// states), each one count x bytes / divisor term that gives both the bytes
// and the sentence that explains them.
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

// The fewest decimals, up to 5, that write `value` exactly (MXFP4's 0.53125
// B must not read as 0.5); none for a value they cannot.
std::optional<int> exactDecimals(double value)
{
    double scaled = value;
    for (int decimals = 0; decimals <= 5; ++decimals, scaled *= 10)
        if (scaled == std::floor(scaled))
            return decimals;
    return std::nullopt;
}

// One formula of the form "count x bytes each / divisor": the bytes and the
// sentence that explains them come from the same three numbers, so they
// cannot drift apart.
struct Term {
    double count;
    const char* what; // "params", "trainable"
    double bytesEach;
    std::string dtype; // "bf16", "fp32"; empty: not said
    double divisor = 1;

    double bytes() const { return count * bytesEach / divisor; }
    void render(Line& l) const
    {
        const int decimals = exactDecimals(bytesEach).value_or(bytesEach >= 0.1 ? 1 : 4);
        l << Count{count} << " " << what << " x " << Fixed{bytesEach, decimals} << " B";
        if (!dtype.empty())
            l << " (" << dtype << ")";
        l << Divisor{divisor};
    }
    // "count x bytes / divisor = total" into `c`'s explanation, `tail` after.
    void explain(MemoryComponent& c, std::string_view tail) const
    {
        Line l(c.explanation);
        render(l);
        l << " = " << Bytes{c.bytes} << tail;
    }
};

// Where each layout of the model states is described: FSDP's docs,
// DeepSpeed's, or the ZeRO paper's baseline (DDP).
const char* stateSource(Sharding s)
{
    return isFsdp(s) ? kSrcFsdp : isZero(s) ? kSrcDeepSpeed : kSrcZero;
}

void addFrozenBase(MemoryBuilder& b, const WeightLayout& layout)
{
    const PlanContext& ctx = b.ctx;
    const Term base{ctx.frozen16, "params", ctx.frozenBytes, ctx.frozenName, layout.frozenDivisor};
    const Term nf4{ctx.quantized, "block weights", kNf4BytesPerParam, "NF4", layout.frozenDivisor};
    const Term mxfp4{ctx.mxfp4, "expert weights", model::kMxfp4BitsPerWeight / 8,
        "MXFP4: 4.25 bits, 4-bit e2m1 + an e8m0 scale per 32", layout.frozenDivisor};
    if (auto* c = b.add("weights", MemoryCategory::Weights, "Frozen base weights",
            base.bytes() + (ctx.qlora ? nf4.bytes() : 0) + mxfp4.bytes(),
            stateSource(ctx.in.sharding));
        c && ctx.explain) {
        Line l(c->explanation);
        if (ctx.qlora) {
            nf4.render(l);
            l << " + ";
        }
        if (ctx.mxfp4 > 0) {
            mxfp4.render(l);
            l << " + ";
        }
        base.render(l);
        l << " = " << Bytes{c->bytes} << layout.where;
        if (ctx.kbitUpcast)
            l << " (prepare_model_for_kbit_training makes every parameter not in NF4 fp32)";
    }
    addQuantConstants(b, layout.frozenDivisor);
}

} // namespace

bool quantConstantsStayWhole(const PlanContext& ctx)
{
    return ctx.qlora && ctx.in.engine != Engine::Tunebench;
}

void addQuantConstants(MemoryBuilder& b, double frozenDivisor)
{
    const PlanContext& ctx = b.ctx;
    if (!ctx.qlora)
        return;
    const bool whole = quantConstantsStayWhole(ctx);
    const Term constants{
        ctx.quantized, "block weights", quantConstantsPerParam(ctx), "", whole ? 1 : frozenDivisor};
    if (auto* c = b.add("quant_constants", MemoryCategory::Weights, "NF4 quantization constants",
            constants.bytes(), whole && ctx.world > 1 ? kSrcQuantState : kSrcQlora);
        c && ctx.explain) {
        const std::string layout = ctx.in.doubleQuant
            ? "double quantization: 1/64 B 8-bit absmax + 4/(64x256) B fp32 second level, 0.127 "
              "bits/param"
            : "no double quantization: 4/64 B fp32 absmax per block of 64, 0.5 bits/param";
        constants.explain(*c,
            " (" + layout
                + (whole && ctx.world > 1
                        ? "; bitsandbytes' quant_state is no parameter, so FSDP and ZeRO-3 "
                          "neither shard nor offload it: whole on every GPU)"
                        : ")"));
    }
}

void addWeights(MemoryBuilder& b, const WeightLayout& layout)
{
    const PlanContext& ctx = b.ctx;
    const char* source = stateSource(ctx.in.sharding);
    const Term working{ctx.full ? ctx.total : ctx.trainable, "params", layout.trainableBytes,
        layout.trainableDtype, layout.trainableDivisor};
    if (!ctx.full)
        addFrozenBase(b, layout);
    const char* key = ctx.full ? "weights" : "lora_weights";
    if (auto* c = b.add(key, MemoryCategory::Weights, ctx.full ? layout.label : "LoRA adapters",
            working.bytes(), ctx.full ? source : kSrcLora);
        c && ctx.explain) {
        Line l(c->explanation);
        if (!ctx.full)
            l << "r=" << ctx.in.lora.rank << ": " << Count{ctx.loraPerLayer} << " per layer x "
              << int(ctx.model.numLayers) << " layers = ";
        working.render(l);
        l << " = " << Bytes{c->bytes} << (ctx.full ? layout.where : "");
    }
    const Term master{ctx.trainable, "trainable", layout.masterBytes, "fp32", layout.masterDivisor};
    if (auto* c = b.add("master_weights", MemoryCategory::Weights, "Master weights (fp32)",
            master.bytes(), source);
        c && ctx.explain)
        master.explain(*c,
            layout.masterDivisor > 1 ? " (sharded)"
                                     : " (mixed precision keeps an fp32 copy for the update)");
}

void addOptimizer(MemoryBuilder& b, double div)
{
    const PlanContext& ctx = b.ctx;
    const Term states{ctx.trainable, "trainable", ctx.optimizerBytes, "", div};
    if (auto* c = b.add("optimizer", MemoryCategory::Optimizer, "Optimizer states", states.bytes(),
            kSrcOptimizer);
        c && ctx.explain) {
        Line l(c->explanation);
        l << optimizerName(ctx.in.optimizer) << ": ";
        states.render(l);
        l << " = " << Bytes{c->bytes};
    }
}

// Gradients whole on every GPU (`whole` bytes each) plus a partition of
// `partition` bytes each over `partitionDiv` GPUs.
void addGradients(
    MemoryBuilder& b, double whole, double partition, double partitionDiv, const char* what)
{
    const PlanContext& ctx = b.ctx;
    const Term full{ctx.trainable, "trainable", whole, "", 1};
    const Term part{ctx.trainable, "trainable", partition, "", partitionDiv};
    const double bytes = full.bytes() + part.bytes();
    if (auto* c = b.add("gradients", MemoryCategory::Gradients, "Gradients", bytes,
            stateSource(ctx.in.sharding));
        c && ctx.explain) {
        Line l(c->explanation);
        if (whole > 0)
            full.render(l);
        if (whole > 0 && partition > 0)
            l << " + ";
        if (partition > 0)
            part.render(l);
        l << " = " << Bytes{bytes} << what;
    }
}

} // namespace tb::plan::detail
