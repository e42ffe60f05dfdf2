#pragma once

#include "common/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// The architecture numbers of a decoder-only transformer, enough to count its
// parameters exactly and to size its activations. Read from a preset YAML or a
// Hugging Face config.json; plain value type, no Qt, no LibTorch.
namespace tb::model {

enum class NormKind {
    RmsNorm, // weight only (Llama, Mistral, Qwen2, Gemma)
    LayerNorm, // weight and bias
};

enum class MlpKind {
    Gated, // SwiGLU / GeGLU: gate, up, down (three matrices)
    Plain, // up, down (two matrices), GELU between
};

struct ModelSpec {
    std::string name; // preset name, e.g. "Llama-3-8B"; for a config.json, its folder name
    std::string hfRepoId; // "meta-llama/Meta-Llama-3-8B"; empty when unknown
    std::vector<std::string> aliases; // other names a user may type
    std::string modelType =
        "llama"; // HF model_type: llama, mistral, qwen2, qwen3, phi3, gemma, gemma2

    std::int64_t hiddenSize = 0;
    std::int64_t intermediateSize = 0;
    std::int64_t numLayers = 0;
    std::int64_t numHeads = 0;
    std::int64_t numKvHeads = 0;
    std::int64_t headDim = 0; // hidden / heads unless the config says otherwise (Gemma: 256)
    std::int64_t vocabSize = 0;
    std::int64_t maxPositionEmbeddings = 0;

    bool tieWordEmbeddings = false;
    bool qkvBias = false; // Qwen2: q, k and v projections carry a bias
    bool outputBias = false; // o_proj bias
    bool mlpBias = false; // gate/up/down biases
    bool lmHeadBias = false;
    bool qkNorm = false; // Qwen3: RMSNorm over head_dim on q and k
    bool fusedQkv = false; // Phi-3: one qkv_proj and one gate_up_proj (LoRA target names)
    int normsPerLayer = 2; // Gemma-2: 4 (pre/post attention, pre/post feed-forward)
    // Gemma 2: attention scores pass through cap * tanh(score / cap) before
    // the softmax, which no fused attention kernel of PyTorch does; 0: none.
    double attnLogitSoftcap = 0;
    NormKind norm = NormKind::RmsNorm;
    MlpKind mlp = MlpKind::Gated;
    // Mixture of experts (Mixtral, Qwen3-MoE): every layer's MLP is a router
    // (hidden -> experts, no bias) and `experts` gated MLPs of
    // `expertIntermediateSize`, of which each token runs `expertsPerToken`,
    // weighted by the router. 0 experts: a dense MLP of intermediateSize.
    std::int64_t experts = 0;
    std::int64_t expertsPerToken = 0;
    std::int64_t expertIntermediateSize = 0;
    // output_router_logits: training adds the router's load-balancing loss,
    // whose softmax of every layer's router logits is kept for backward.
    bool outputRouterLogits = false;

    // torch_dtype (or dtype) as the checkpoint stores it, "bfloat16"; empty
    // when unknown (a preset). A merged export is written in it.
    std::string torchDtype;
    // The total the model's authors publish (model card or safetensors
    // metadata); a test checks countParameters() equals it exactly.
    std::optional<std::int64_t> publishedParams;
    std::string publishedParamsSource;
    std::string source; // where the architecture numbers come from (config.json URL, file path)

    // Things the reader noticed but that do not stop a plan (an unknown
    // model_type read as a Llama-style decoder, for instance).
    std::vector<std::string> warnings;

    bool isMixtureOfExperts() const { return experts > 0; }
    std::int64_t queryDim() const { return numHeads * headDim; }
    std::int64_t kvDim() const { return numKvHeads * headDim; }
};

// Every problem with the numbers, each naming its field (hidden_size must be
// positive, heads must divide, ...). `origin` is the file the spec came from.
common::Status validateModelSpec(const ModelSpec& spec, const std::string& origin);

// One linear layer of a decoder block, under its Hugging Face module name
// (the names PEFT's target_modules use).
struct LinearLayer {
    std::string name; // q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (Phi-3:
                      // qkv_proj, gate_up_proj; a mixture of experts: gate, the router)
    std::int64_t inFeatures = 0;
    std::int64_t outFeatures = 0;
    bool bias = false;
    std::int64_t copies = 1; // experts holding this projection; 1: a dense layer

    std::int64_t params() const
    {
        return copies * (inFeatures * outFeatures + (bias ? outFeatures : 0));
    }
};

// The linear layers of one decoder block, in forward order.
std::vector<LinearLayer> blockLinearLayers(const ModelSpec& spec);

// The same without allocating, for the planner's hot loops: at most
// kMaxBlockLinears shapes, the return value says how many. A mixture of
// experts lists its router, then each expert projection once with the
// number of experts holding it (`copies`) and the number a token runs
// through (`active`).
enum class LinearKind { Q, K, V, Qkv, O, Gate, Up, GateUp, Down, Router };
struct LinearShape {
    LinearKind kind = LinearKind::Q;
    std::int64_t inFeatures = 0;
    std::int64_t outFeatures = 0;
    bool bias = false;
    std::int64_t copies = 1;
    std::int64_t active = 1;

    std::int64_t paramsPerCopy() const
    {
        return inFeatures * outFeatures + (bias ? outFeatures : 0);
    }
    // What LoRA adapts here: one projection per layer. The experts are
    // 3-D parameters in transformers 5 (peft reaches them only through
    // target_parameters) and the router is not a projection of the stream.
    bool adaptable() const { return copies == 1 && kind != LinearKind::Router; }
};
inline constexpr int kMaxBlockLinears = 8;
int blockLinearShapes(const ModelSpec& spec, LinearShape (&out)[kMaxBlockLinears]);
const char* linearName(LinearKind kind); // "q_proj", ..., "gate_up_proj", "gate" (router)
std::optional<LinearKind> linearKindNamed(const std::string& name);
bool isAttentionLinear(LinearKind kind);
// Whether a LoRA target module name selects the linear `kind`: its own name,
// or for a fused matrix (Phi-3's qkv_proj, gate_up_proj) the name of one of
// its parts, which has no module of its own to adapt.
bool targetSelects(const std::string& name, LinearKind kind);

} // namespace tb::model
