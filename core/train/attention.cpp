#include "train/attention.h"

#include <cmath>

namespace tb::train {

using torch::indexing::Slice;

RmsNorm::Weight normWeightOf(const LlamaConfig& config)
{
    return config.gemmaScaling ? RmsNorm::Weight::OffsetByOne : RmsNorm::Weight::Plain;
}

torch::Tensor applyRotary(
    const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    const std::int64_t rotating = cos.size(-1);
    if (rotating < x.size(-1)) {
        // Partial rotary (Phi-4-mini): the head's leading dimensions turn, the rest pass.
        const torch::Tensor turned = applyRotary(x.narrow(-1, 0, rotating), cos, sin);
        return torch::cat({turned, x.narrow(-1, rotating, x.size(-1) - rotating)}, -1);
    }
    const std::int64_t half = x.size(-1) / 2;
    const torch::Tensor x1 = x.index({"...", Slice(0, half)});
    const torch::Tensor x2 = x.index({"...", Slice(half, torch::indexing::None)});
    return x * cos + torch::cat({-x2, x1}, -1) * sin;
}

torch::Tensor repeatKv(const torch::Tensor& kv, std::int64_t groups)
{
    if (groups == 1)
        return kv;
    const auto b = kv.size(0), heads = kv.size(1), t = kv.size(2), d = kv.size(3);
    return kv.unsqueeze(2).expand({b, heads, groups, t, d}).reshape({b, heads * groups, t, d});
}

// K/V heads come expanded: grouped K/V (enable_gqa) can fall back to the
// math kernel, which costs more than the expansion.
torch::Tensor fusedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& allowed, bool causal, double scale)
{
    const std::optional<double> given = scale > 0 ? std::optional<double>(scale) : std::nullopt;
    if (allowed.defined())
        return at::scaled_dot_product_attention(q, k, v, allowed, 0.0, causal, given);
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal, given);
}

torch::Tensor plainAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& allowed, bool causal, const ScoreShape& shape)
{
    const double scale =
        shape.scale > 0 ? shape.scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
    if (shape.softcap > 0)
        scores = torch::tanh(scores / shape.softcap) * shape.softcap;
    torch::Tensor mask = allowed;
    if (!mask.defined() && causal) {
        const auto queries = q.size(-2), keys = k.size(-2);
        mask = torch::ones({queries, keys}, q.options().dtype(torch::kBool)).tril(keys - queries);
    }
    if (mask.defined())
        scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
    const auto softmaxType = q.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    const torch::Tensor probabilities = torch::softmax(scores, -1, softmaxType).to(q.scalar_type());
    return torch::matmul(probabilities, v);
}

SelfAttention::SelfAttention(
    const LlamaConfig& config, const torch::TensorOptions& options, std::int64_t layer)
    : m_numHeads(config.numHeads)
    , m_numKvHeads(config.numKvHeads)
    , m_headDim(config.headDim)
    , m_windowed(config.layerIsWindowed(layer))
    , m_slidingRope(config.layerUsesSlidingRope(layer))
{
    if (config.queryPreAttnScalar > 0)
        m_scores.scale = 1.0 / std::sqrt(config.queryPreAttnScalar);
    m_scores.softcap = config.attnLogitSoftcap;
    const RmsNorm::Weight normKind = normWeightOf(config);
    const std::int64_t qWidth = m_numHeads * m_headDim;
    const std::int64_t kvWidth = m_numKvHeads * m_headDim;
    const std::int64_t hidden = config.hiddenSize;
    if (config.fusedQkv) {
        m_qkv = register_module("qkv_proj",
            std::make_shared<DenseLinear>(hidden, qWidth + 2 * kvWidth, config.qkvBias, options));
    } else {
        m_q = register_module(
            "q_proj", std::make_shared<DenseLinear>(hidden, qWidth, config.qkvBias, options));
        m_k = register_module(
            "k_proj", std::make_shared<DenseLinear>(hidden, kvWidth, config.qkvBias, options));
        m_v = register_module(
            "v_proj", std::make_shared<DenseLinear>(hidden, kvWidth, config.qkvBias, options));
    }
    m_o = register_module(
        "o_proj", std::make_shared<DenseLinear>(qWidth, hidden, config.outputBias, options));
    if (config.qkNorm) {
        m_qNorm = register_module(
            "q_norm", std::make_shared<RmsNorm>(m_headDim, config.rmsNormEps, options, normKind));
        m_kNorm = register_module(
            "k_norm", std::make_shared<RmsNorm>(m_headDim, config.rmsNormEps, options, normKind));
    }
}

std::array<torch::Tensor, 3> SelfAttention::projectQkv(const torch::Tensor& hidden)
{
    const auto batch = hidden.size(0), tokens = hidden.size(1);
    const auto heads = [&](const torch::Tensor& projected, std::int64_t count) {
        return projected.view({batch, tokens, count, m_headDim});
    };
    if (!m_qkv)
        return {heads(m_q->forward(hidden), m_numHeads), heads(m_k->forward(hidden), m_numKvHeads),
            heads(m_v->forward(hidden), m_numKvHeads)};
    // Phi-3's rows: the queries, then the keys, then the values.
    const torch::Tensor qkv = m_qkv->forward(hidden);
    const std::int64_t qWidth = m_numHeads * m_headDim, kvWidth = m_numKvHeads * m_headDim;
    return {heads(qkv.narrow(-1, 0, qWidth), m_numHeads),
        heads(qkv.narrow(-1, qWidth, kvWidth), m_numKvHeads),
        heads(qkv.narrow(-1, qWidth + kvWidth, kvWidth), m_numKvHeads)};
}

torch::Tensor SelfAttention::forward(
    const torch::Tensor& hidden, const AttentionInputs& inputs, LayerCache* cache)
{
    const auto batch = hidden.size(0), tokens = hidden.size(1);
    auto [qHeads, kHeads, vHeads] = projectQkv(hidden);
    if (m_qNorm) {
        qHeads = m_qNorm->forward(qHeads);
        kHeads = m_kNorm->forward(kHeads);
    }
    const bool ownTables = m_slidingRope && inputs.slidingCos.defined();
    const torch::Tensor& cos = ownTables ? inputs.slidingCos : inputs.cos;
    const torch::Tensor& sin = ownTables ? inputs.slidingSin : inputs.sin;
    const torch::Tensor q = applyRotary(qHeads.transpose(1, 2), cos, sin);
    torch::Tensor k = applyRotary(kHeads.transpose(1, 2), cos, sin);
    torch::Tensor v = vHeads.transpose(1, 2);
    if (cache) {
        if (cache->keys.defined()) {
            k = torch::cat({cache->keys, k}, 2);
            v = torch::cat({cache->values, v}, 2);
        }
        cache->keys = k;
        cache->values = v;
    }
    const std::int64_t groups = m_numHeads / m_numKvHeads;
    const torch::Tensor kAll = repeatKv(k, groups);
    const torch::Tensor vAll = repeatKv(v, groups);
    const bool window = m_windowed && inputs.windowAllowed.defined();
    const torch::Tensor& allowed = window ? inputs.windowAllowed : inputs.allowed;
    const bool causal = !window && inputs.causal;
    const torch::Tensor attended =
        inputs.backend == AttentionBackend::Fused && m_scores.softcap == 0
        ? fusedAttention(q, kAll, vAll, allowed, causal, m_scores.scale)
        : plainAttention(q, kAll, vAll, allowed, causal, m_scores);
    return m_o->forward(attended.transpose(1, 2).reshape({batch, tokens, m_numHeads * m_headDim}));
}

std::shared_ptr<LinearLayer>* SelfAttention::slot(const std::string& name)
{
    std::shared_ptr<LinearLayer>* found = name == "q_proj" ? &m_q
        : name == "k_proj"                                 ? &m_k
        : name == "v_proj"                                 ? &m_v
        : name == "qkv_proj"                               ? &m_qkv
        : name == "o_proj"                                 ? &m_o
                                                           : nullptr;
    return found && *found ? found : nullptr;
}

std::vector<std::string> SelfAttention::projectionNames() const
{
    if (m_qkv)
        return {"qkv_proj", "o_proj"};
    return {"q_proj", "k_proj", "v_proj", "o_proj"};
}

std::shared_ptr<LinearLayer> SelfAttention::projection(const std::string& name)
{
    std::shared_ptr<LinearLayer>* found = slot(name);
    return found ? *found : nullptr;
}

void SelfAttention::replaceProjection(const std::string& name, std::shared_ptr<LinearLayer> layer)
{
    std::shared_ptr<LinearLayer>* target = slot(name);
    TORCH_CHECK(target, "SelfAttention has no projection '", name, "'");
    *target = replace_module(name, std::move(layer));
}

} // namespace tb::train
