#pragma once

#include "train/attention.h"
#include "train/chunked_loss.h"
#include "train/layers.h"
#include "train/model_config.h"
#include "train/sparse_moe.h"

#include <torch/torch.h>

#include <functional>

namespace tb::train {

// Keys and values of the positions already seen, one entry per layer, for
// generating a token at a time.
struct KvCache {
    std::vector<LayerCache> layers;
    std::int64_t length() const;
};

// Pre-norm decoder block: x + attn(norm(x)), then + mlp(norm(.)). With four
// norms per layer (Gemma 2 and 3) the attention's and the MLP's outputs are
// normed too before they are added: x + norm(attn(norm(x))), and likewise.
class DecoderLayer : public torch::nn::Module {
public:
    DecoderLayer(
        const LlamaConfig& config, const torch::TensorOptions& options, std::int64_t index);
    torch::Tensor forward(
        const torch::Tensor& hidden, const AttentionInputs& inputs, LayerCache* cache);

    SelfAttention& attention() { return *m_attention; }
    // The MLP's projections by their names under this layer
    // ("mlp.down_proj", "block_sparse_moe.experts.3.w1"), and replacement.
    std::vector<std::pair<std::string, std::shared_ptr<LinearLayer>>> mlpProjections();
    void replaceMlpProjection(const std::string& name, std::shared_ptr<LinearLayer> layer);
    SparseMoe* experts() { return m_experts.get(); } // null in a dense model

private:
    torch::Tensor mlpForward(const torch::Tensor& input);

    std::shared_ptr<RmsNorm> m_inputNorm;
    std::shared_ptr<SelfAttention> m_attention;
    std::shared_ptr<RmsNorm> m_postAttentionNorm;
    std::string m_mlpName; // "mlp"; Mixtral: "block_sparse_moe"
    std::shared_ptr<GatedMlp> m_mlp; // null in a mixture of experts
    std::shared_ptr<SparseMoe> m_experts; // null in a dense model
    std::shared_ptr<RmsNorm> m_preFeedforwardNorm; // four norms per layer only
    std::shared_ptr<RmsNorm> m_postFeedforwardNorm;
};

// The decoder stack: embed_tokens, layers, norm (transformers' LlamaModel).
class LlamaModel : public torch::nn::Module {
public:
    LlamaModel(const LlamaConfig& config, const torch::TensorOptions& options);

    TokenEmbedding& embedding() { return *m_embedding; }
    RmsNorm& norm() { return *m_norm; }
    std::vector<std::shared_ptr<DecoderLayer>>& layers() { return m_layers; }

private:
    std::shared_ptr<TokenEmbedding> m_embedding;
    std::vector<std::shared_ptr<DecoderLayer>> m_layers;
    std::shared_ptr<RmsNorm> m_norm;
};

// Calls around the decoder stack's forward, for the data-parallel engine
// (FSDP gathers a layer's parameters before it runs and frees them after).
class ForwardHooks {
public:
    virtual ~ForwardHooks() = default;
    virtual void beforeEmbedding() { }
    // The after* hooks may return a tensor standing for `hidden` (one
    // carrying a backward hook).
    virtual torch::Tensor afterEmbedding(torch::Tensor hidden) { return hidden; }
    virtual void beforeLayer(size_t layer) { (void)layer; }
    virtual torch::Tensor afterLayer(size_t layer, torch::Tensor hidden)
    {
        (void)layer;
        return hidden;
    }
    // Before the final norm (and the head the caller applies after it).
    virtual void beforeHead() { }
};

// A Llama-family causal language model whose parameter names are those of
// transformers' LlamaForCausalLM ("model.layers.0.self_attn.q_proj.weight",
// "lm_head.weight"), so safetensors load and save by name. With tied
// embeddings the output projection is model.embed_tokens.weight and there is
// no lm_head parameter.
class LlamaForCausalLm : public torch::nn::Module {
public:
    LlamaForCausalLm(const LlamaConfig& config, torch::ScalarType dtype);

    const LlamaConfig& config() const { return m_config; }
    torch::ScalarType dtype() const { return m_dtype; }

    // inputIds [batch, tokens] (int64). Returns the final hidden states after
    // the last norm, [batch, tokens, hiddenSize]. With `cache`, positions
    // continue after the cached ones and the cache receives these.
    torch::Tensor hiddenStates(const torch::Tensor& inputIds, KvCache* cache = nullptr);
    // Output projection of hidden states: [..., vocabSize] in the model
    // dtype, softcapped where the model caps its logits (Gemma 2).
    torch::Tensor logitsFrom(const torch::Tensor& hidden);
    // hiddenStates then logitsFrom.
    torch::Tensor forward(const torch::Tensor& inputIds, KvCache* cache = nullptr);
    // The next-token loss of `rows` (summed, / normalizer) through
    // chunkedCrossEntropy with this model's head and logit softcap.
    torch::Tensor nextTokenLoss(
        const LossRows& rows, double normalizer, std::int64_t chunkRows = 0);

    void setAttentionBackend(AttentionBackend backend) { m_backend = backend; }
    AttentionBackend attentionBackend() const { return m_backend; }

    // Runs one decoder layer; forward passes go through here, so part 2 can
    // recompute a layer in backward (activation checkpointing) by wrapping it.
    using LayerRunner = std::function<torch::Tensor(DecoderLayer& layer,
        const torch::Tensor& hidden, const AttentionInputs& inputs, LayerCache* cache)>;
    void setLayerRunner(LayerRunner runner) { m_layerRunner = std::move(runner); }
    // Not owned; null: none. Passes with a KV cache (generation) skip them.
    void setForwardHooks(ForwardHooks* hooks) { m_hooks = hooks; }

    LlamaModel& model() { return *m_model; }
    torch::Tensor& outputWeight(); // lm_head.weight, or the embedding when tied
    // Per mixture-of-experts layer, the tokens each expert took in the last
    // forward (SparseMoe::lastRouted); empty for a dense model.
    std::vector<std::vector<std::int64_t>> expertRouting();
    // Every mixture-of-experts layer's training forwards report to `balance`
    // (not owned; null: none), by the layer's index.
    void setRouterBalance(RouterBalance* balance);
    // Whether a projection of projections() belongs to an expert.
    static bool isExpertProjection(const std::string& qualifiedName);

    // Every projection by its qualified name ("model.layers.3.mlp.up_proj",
    // "model.layers.3.mlp.experts.7.down_proj"), and in-place replacement
    // (how LoRA adapters attach and QLoRA quantises). A mixture of experts'
    // router is not among them: it stays in the compute dtype.
    std::vector<std::pair<std::string, std::shared_ptr<LinearLayer>>> projections();
    void replaceProjection(const std::string& qualifiedName, std::shared_ptr<LinearLayer> layer);

    // Random weights as transformers initialises them: N(0, std) for the
    // projections and the embedding, zero biases, unit norm weights.
    void initializeRandom(std::uint64_t seed, double std = 0.02);

    // cos/sin tables [tokens, headDim] for positions first..first+tokens-1;
    // `sliding`: those of Gemma 3's sliding-window layers.
    std::pair<torch::Tensor, torch::Tensor> rotaryTables(
        std::int64_t first, std::int64_t tokens, const torch::Device& device, bool sliding = false);

private:
    AttentionInputs attentionInputs(
        std::int64_t pastLength, std::int64_t tokens, const torch::Device& device);

    LlamaConfig m_config;
    torch::ScalarType m_dtype;
    AttentionBackend m_backend = AttentionBackend::Fused;
    LayerRunner m_layerRunner;
    ForwardHooks* m_hooks = nullptr;
    std::shared_ptr<LlamaModel> m_model;
    std::shared_ptr<DenseLinear> m_lmHead; // null when tied
    torch::Tensor m_inverseFrequencies; // double, CPU
    torch::Tensor m_slidingInverseFrequencies; // Gemma 3's sliding-window layers; or undefined
    torch::Tensor m_longInverseFrequencies; // LongRoPE beyond its original length; or undefined
};

} // namespace tb::train
