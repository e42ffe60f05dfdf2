#pragma once

#include "train/layers.h"
#include "train/model_config.h"

#include <torch/torch.h>

#include <array>

namespace tb::train {

enum class AttentionBackend {
    Fused, // at::scaled_dot_product_attention: LibTorch picks flash, memory-efficient or math
    Plain, // matmul, mask, softmax in fp32, matmul: the reference formulation
};

// What every layer's attention needs for one forward pass.
struct AttentionInputs {
    torch::Tensor cos; // [tokens, headDim], compute dtype
    torch::Tensor sin;
    // Gemma 3's sliding-window layers' own tables; undefined: the above.
    torch::Tensor slidingCos;
    torch::Tensor slidingSin;
    torch::Tensor allowed; // bool [queries, keys], true where a query may attend; or undefined
    bool causal = false; // with `allowed` undefined: plain causal attention, queries == keys
    // The mask of layers that attend within the sliding window, where the
    // window cuts anything off; undefined: those layers use the above.
    torch::Tensor windowAllowed;
    AttentionBackend backend = AttentionBackend::Fused;
};

// How scores are formed before the softmax: q k^T * scale, then, with a
// softcap c, c * tanh(s / c) (Gemma 2).
struct ScoreShape {
    double scale = 0; // 0: 1 / sqrt(head_dim)
    double softcap = 0; // 0: none
};

// Keys and values of earlier positions for one layer, [batch, kvHeads, tokens, headDim],
// before their heads are expanded.
struct LayerCache {
    torch::Tensor keys;
    torch::Tensor values;
};

// How the model's norms weigh: Gemma's (1 + w), else w.
RmsNorm::Weight normWeightOf(const LlamaConfig& config);

// x * cos + rotate_half(x) * sin, with rotate_half(x) = [-x2, x1] for the two
// halves of the head (the Hugging Face layout of q_proj/k_proj rows). Tables
// narrower than the head turn its leading dimensions only.
torch::Tensor applyRotary(
    const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// [b, kvHeads, t, d] -> [b, kvHeads * groups, t, d], each K/V head repeated for
// the `groups` query heads that share it (grouped-query attention, Ainslie et al. 2023).
torch::Tensor repeatKv(const torch::Tensor& kv, std::int64_t groups);

// softmax(scores(q, k) + mask) v with the softmax in fp32 (fp64 for fp64), as
// transformers' eager attention does. Heads already expanded.
torch::Tensor plainAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& allowed, bool causal, const ScoreShape& shape = {});

// The same through at::scaled_dot_product_attention, which picks the flash,
// memory-efficient or math kernel. `allowed` as above, or undefined; `causal`
// only with no mask and as many queries as keys. No softcap: no kernel has it.
torch::Tensor fusedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& allowed, bool causal, double scale = 0);

// Causal self-attention with rotary positions and grouped K/V heads, and
// with per-head query/key norms where the model has them (qk_norm). Layer
// `layer` of `config` decides whether it attends within the sliding window.
// With a score softcap it computes as plainAttention whatever the backend.
class SelfAttention : public torch::nn::Module {
public:
    SelfAttention(
        const LlamaConfig& config, const torch::TensorOptions& options, std::int64_t layer = 0);

    // hidden [batch, tokens, hiddenSize]; `cache` (optional) holds earlier
    // positions and receives these.
    torch::Tensor forward(
        const torch::Tensor& hidden, const AttentionInputs& inputs, LayerCache* cache);

    // "q_proj", "k_proj", "v_proj", "o_proj"; Phi-3: "qkv_proj", "o_proj".
    std::vector<std::string> projectionNames() const;
    std::shared_ptr<LinearLayer> projection(const std::string& name);
    void replaceProjection(const std::string& name, std::shared_ptr<LinearLayer> layer);

private:
    std::shared_ptr<LinearLayer>* slot(const std::string& name);
    // q, k and v [batch, heads, tokens, headDim] before rotary and norms.
    std::array<torch::Tensor, 3> projectQkv(const torch::Tensor& hidden);

    std::int64_t m_numHeads;
    std::int64_t m_numKvHeads;
    std::int64_t m_headDim;
    bool m_windowed;
    bool m_slidingRope;
    ScoreShape m_scores;
    std::shared_ptr<LinearLayer> m_q;
    std::shared_ptr<LinearLayer> m_k;
    std::shared_ptr<LinearLayer> m_v;
    std::shared_ptr<LinearLayer> m_o;
    std::shared_ptr<LinearLayer> m_qkv; // Phi-3: q, k and v in one matrix, the three null
    // Qwen3, Gemma 3: RMSNorm over each head of the queries and keys, before rotary.
    std::shared_ptr<RmsNorm> m_qNorm;
    std::shared_ptr<RmsNorm> m_kNorm;
};

} // namespace tb::train
