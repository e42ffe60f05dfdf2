#pragma once

#include "common/error.h"
#include "model/model_spec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::model {

enum class RopeScalingType {
    None,
    Linear, // positions divided by `factor`
    Llama3, // Llama 3.1's per-frequency blend of scaled and unscaled frequencies
    LongRope, // Phi-3.5, Phi-4-mini: per-frequency factors, short or long by the sequence
    Other, // named in `typeName` (yarn, dynamic, ...)
};

struct RopeScaling {
    RopeScalingType type = RopeScalingType::None;
    std::string typeName = "default"; // as written
    std::string typeField; // where it was written: "rope_scaling.rope_type", ...
    double factor = 1.0;
    double lowFreqFactor = 1.0;
    double highFreqFactor = 4.0;
    std::int64_t originalMaxPositionEmbeddings = 0;
    // LongRoPE: one factor per rotary frequency, the short ones up to
    // originalMaxPositionEmbeddings positions, the long ones beyond; cos and
    // sin scaled by attentionFactor.
    std::vector<double> shortFactor;
    std::vector<double> longFactor;
    double attentionFactor = 1.0;
};

// Everything Tunebench takes from a Hugging Face config.json: the
// architecture numbers the planner counts (the ModelSpec part) and the
// numbers the trainer computes with. Fields the file leaves out take the
// default of its model_type's configuration class (hf_architecture.h).
struct HfConfig : ModelSpec {
    std::string architecture; // architectures[0]: LlamaForCausalLM, ...; empty when absent

    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;
    RopeScaling ropeScaling;
    // Gemma 3: the sliding-window layers' own rotary base and scaling
    // (rope_parameters.sliding_attention, or rope_local_base_freq); the
    // global layers take ropeTheta and ropeScaling.
    std::optional<double> slidingRopeTheta;
    RopeScaling slidingRopeScaling;
    // sliding_window where the architecture applies it: the layers marked in
    // `windowedLayers` attend to the last `slidingWindow` positions only
    // (Mistral v0.1: every layer; Gemma 2: every other one, from layer_types).
    std::optional<std::int64_t> slidingWindow;
    std::vector<bool> windowedLayers; // one per layer when slidingWindow is set; empty: all

    bool layerUsesSlidingRope(std::int64_t layer) const
    {
        return slidingRopeTheta && static_cast<size_t>(layer) < layerTypes.size()
            && layerTypes[static_cast<size_t>(layer)] == "sliding_attention";
    }

    bool layerIsWindowed(std::int64_t layer) const
    {
        return slidingWindow
            && (windowedLayers.empty() || windowedLayers.at(static_cast<size_t>(layer)));
    }

    // Gemma: RMSNorm scales by (1 + weight) in fp32, embeddings are
    // multiplied by sqrt(hidden_size).
    bool gemmaScaling = false;
    double queryPreAttnScalar = 0; // scores scaled by its -1/2 power; 0: by head_dim's
    double finalLogitSoftcap = 0; // logits become cap * tanh(logit / cap); 0: none

    std::optional<std::int64_t> bosTokenId;
    std::vector<std::int64_t> eosTokenIds;

    // Facts a runner must check before it can compute this model exactly.
    std::string activation = "silu"; // hidden_act or hidden_activation
    std::string activationField = "hidden_act";
    bool quantized = false; // quantization_config present
    double partialRotaryFactor = 1.0; // the leading share of each head that rotates

    // The rotating part of a head: int(head_dim * partial_rotary_factor), as transformers.
    std::int64_t rotaryDim() const
    {
        return static_cast<std::int64_t>(static_cast<double>(headDim) * partialRotaryFactor);
    }
    bool slidingWindowLayers = false; // Qwen2/3: use_sliding_window
    std::vector<std::string> layerTypes; // layer_types, as written or as the architecture fills it
    bool bidirectional = false; // use_bidirectional_attention (Gemma's embedding models)
    // The first of attention_dropout, resid_pdrop (Phi-3), embd_pdrop that is
    // not 0, and its value; empty: none.
    std::string dropoutField;
    double dropout = 0;
    bool fromTextConfig = false; // read from a multimodal config's text_config
    // The multimodal config's own model_type ("gemma3") when fromTextConfig;
    // `architecture`, the token ids, the dtype and the head's tie are then
    // the multimodal model's, which its config holds outside text_config.
    std::string multimodalType;
    // Gemma 3's image-text model, whose language model the trainer trains
    // as text (the vision tower and its projector are left out).
    bool isGemma3Multimodal() const
    {
        return fromTextConfig && multimodalType == "gemma3" && modelType == "gemma3_text"
            && (architecture.empty() || architecture == "Gemma3ForConditionalGeneration");
    }

    // A mixture of experts' routing (the counts are ModelSpec's): whether the
    // top-k weights are renormalised to sum to one (Mixtral always;
    // Qwen3-MoE's norm_topk_prob), and the load-balancing loss transformers
    // adds, coefficient times its value, when output_router_logits is set.
    bool normTopkProb = false;
    double routerAuxLossCoef = 0.001;
    double routerJitterNoise = 0; // Mixtral: multiplicative noise on the router input in training
};

// Reads a Hugging Face config.json (llama, mistral, qwen2, qwen3, phi3, gemma,
// gemma2, gemma3_text, mixtral, qwen3_moe and other Llama-style decoders):
// the one reader of config.json, for the planner and the trainer alike.
// Every field that changes the parameter count or the computation is read
// and type-checked. Other mixture-of-experts families are refused (the
// count would be wrong). Errors name the file, the
// field, the value and what was expected; all problems are reported at once.
// `path` may be the config.json itself or the model folder holding it.
common::Result<HfConfig> readHfModelConfig(const std::string& path);

// The same from text; `origin` names the source in errors.
common::Result<HfConfig> parseHfModelConfig(std::string_view json, const std::string& origin);

// The architecture numbers only (what the planner needs).
common::Result<ModelSpec> readHfConfig(const std::string& path);
common::Result<ModelSpec> parseHfConfig(std::string_view json, const std::string& origin);

} // namespace tb::model
