#include "plan/memory_parts.h"

// What a decoder layer of a transformers model with peft's LoRA keeps for
// backward under the Hugging Face Trainer (engine hf-trainer), tensor by
// tensor as PyTorch's saved-tensor hooks list them for the versions in
// packaging/python-reference.txt (docs/PLANNER.md 4.14):
//
// * peft keeps adapters in fp32 (in the model's dtype for a sharded QLoRA,
//   PlanContext::adapterBytes) and casts each adapter's input to the
//   adapter's dtype before lora_A (LoraLayer._cast_input_dtype): without
//   autocast every adapted linear saves its own copy of its input in that
//   dtype; under autocast lora_A's matmul saves its own 16-bit copy. Only an
//   input already in the dtype the matmul reads is shared, one tensor for
//   the adapters reading it.
// * bitsandbytes' 4-bit matmul saves no input (MatMul4Bit keeps (None, B))
//   and returns its output in its input's dtype, autocast or not.
// * prepare_model_for_kbit_training makes every parameter that is not 4-bit
//   fp32, so the embeddings, the norms and with them the hidden states are
//   fp32 (PlanContext::streamBytes).
namespace tb::plan::detail {

namespace {

// The tensor a projection reads: the first norm's output, the attention's
// output, the second norm's output, or the gated product.
enum class Input { AttentionIn, AttentionOut, MlpIn, MlpProduct };

Input inputOf(model::LinearKind kind)
{
    switch (kind) {
    case model::LinearKind::O:
        return Input::AttentionOut;
    case model::LinearKind::Gate:
    case model::LinearKind::Up:
    case model::LinearKind::GateUp:
    case model::LinearKind::Router:
        return Input::MlpIn;
    case model::LinearKind::Down:
        return Input::MlpProduct;
    default:
        return Input::AttentionIn;
    }
}

struct Dtypes {
    double attention; // SDPA's q, k, v and output
    double mlp; // the gated MLP's outputs and product
    double stream; // the hidden states, the norms' outputs

    double of(Input input) const
    {
        return input == Input::AttentionOut ? attention : input == Input::MlpProduct ? mlp : stream;
    }
};

Dtypes dtypesOf(const PlanContext& ctx)
{
    const double s = ctx.streamBytes;
    const double matmul = ctx.autocast ? 2 : s;
    return {.attention = matmul, .mlp = ctx.qlora ? s : matmul, .stream = s};
}

// The inputs the layer's projections save: a trained weight's input
// (full fine-tune, one tensor per input shared by its readers) or each
// adapter's as peft casts it; the adapters' rank-sized outputs.
double projectionInputs(const PlanContext& ctx, const Dtypes& d)
{
    model::LinearShape shapes[model::kMaxBlockLinears];
    const int n = model::blockLinearShapes(ctx.model, shapes);
    const double t = ctx.tokensPerMicro;
    const bool dropout = ctx.lora && ctx.in.lora.dropout > 0;
    // The dtype lora_A's matmul reads: autocast's 16 bits, else the adapter's.
    const double read = ctx.autocast ? 2 : ctx.adapterBytes;
    bool shared[4] = {false, false, false, false};
    double bytes = 0;
    for (int i = 0; i < n; ++i) {
        const Input input = inputOf(shapes[i].kind);
        const double in = double(shapes[i].inFeatures) * (shapes[i].adaptable() ? 1 : 0);
        if (in == 0)
            continue;
        const double inputBytes = d.of(input);
        if (ctx.full || (!dropout && inputBytes == read && inputBytes == ctx.adapterBytes)) {
            if (ctx.full || ctx.targets.has(shapes[i].kind))
                shared[int(input)] = true;
        } else if (ctx.targets.has(shapes[i].kind)) {
            bytes += (read + (dropout ? 1 : 0)) * t * in; // its own copy, + dropout's mask
        }
        if (ctx.lora && ctx.targets.has(shapes[i].kind))
            bytes += read * t * double(ctx.in.lora.rank); // lora_A's output
    }
    const model::ModelSpec& m = ctx.model;
    const double width[4] = {double(m.hiddenSize), double(m.queryDim()), double(m.hiddenSize),
        double(m.intermediateSize)};
    for (int g = 0; g < 4; ++g)
        if (shared[g])
            bytes += d.of(Input(g)) * t * width[g];
    return bytes;
}

} // namespace

LayerActivations hfLayerActivations(const PlanContext& ctx)
{
    const model::ModelSpec& m = ctx.model;
    const double t = ctx.tokensPerMicro;
    const double h = double(m.hiddenSize), f = double(m.intermediateSize);
    const double qd = double(m.queryDim()), kvd = double(m.kvDim());
    const Dtypes d = dtypesOf(ctx);
    LayerActivations act;
    // RMSNorm upcasts its input to fp32 and saves it with the rsqrt; a
    // trained weight also saves the normalised input.
    act.norms = (4 * t * h + 4 * t + (ctx.full ? d.stream * t * h : 0)) * m.normsPerLayer;
    act.attention = d.attention * t * (qd + 2 * kvd) + d.attention * t * qd;
    if (ctx.attention == Attention::Sdpa)
        act.attention += 4 * t * double(m.numHeads); // the kernel's logsumexp
    else
        act.scores = scoreBytesPerElement(ctx) * double(m.numHeads) * ctx.peakSeqLen
            * ctx.peakSeqLen * ctx.rowsPerMicro;
    if (m.qkNorm)
        act.attention += (4 + (ctx.full ? d.stream : 0)) * t * (qd + kvd);
    if (m.isMixtureOfExperts())
        act.mlp = expertActivations(ctx, ctx.full);
    else
        act.mlp = (m.mlp == model::MlpKind::Gated ? 3 : 1) * d.mlp * t * f;
    act.lora = projectionInputs(ctx, d);
    return act;
}

double hfAutocastCopies(const PlanContext& ctx)
{
    if (!ctx.autocast)
        return 0;
    // fp32 lora_A and lora_B cast to 16 bits once a forward and saved for
    // backward; QLoRA's fp32 lm_head likewise.
    const double adapters = ctx.adapterBytes == 4 ? ctx.trainable : 0;
    const double head =
        ctx.kbitUpcast ? double(ctx.model.vocabSize) * double(ctx.model.hiddenSize) : 0;
    return 2 * (adapters + head);
}

} // namespace tb::plan::detail
