#pragma once

#include <cstdint>
#include <string>

namespace tb::model {

// What one Hugging Face model_type means when its config.json leaves a field
// out, and how its layers are laid out. The defaults are those of the
// architecture's configuration class in transformers 5.23 (LlamaConfig,
// MistralConfig, ...): the library fills a missing field from there, not
// from PretrainedConfig, so tie_word_embeddings defaults to false for Llama
// and to true for Gemma.
struct HfArchitecture {
    const char* modelType = "llama";

    // Defaults of missing fields.
    // The shape, where published configs leave it to the configuration
    // class (Gemma 3's image-text text_config: head count, vocabulary);
    // 0: the field is required.
    std::int64_t hiddenSize = 0;
    std::int64_t intermediateSize = 0;
    std::int64_t numLayers = 0;
    std::int64_t numHeads = 0;
    std::int64_t vocabSize = 0;
    bool tieWordEmbeddings = false;
    std::int64_t maxPositionEmbeddings = 2048;
    std::int64_t numKvHeads = 0; // 0: num_attention_heads
    std::int64_t headDim = 0; // 0: hidden_size / num_attention_heads
    double rmsNormEps = 1e-6;
    double ropeTheta = 10000.0;
    double slidingRopeTheta =
        0; // Gemma 3: sliding-window layers rotate with their own base; 0: none
    std::int64_t slidingWindow = 0; // Mistral: 4096; Gemma 2 and 3: 4096; 0: none
    double queryPreAttnScalar =
        0; // Gemma 2 and 3: 256 (scores scaled by its -1/2 power); 0: head_dim
    double attnLogitSoftcap = 0; // Gemma 2: 50; 0: none
    double finalLogitSoftcap = 0; // Gemma 2: 30; 0: none

    // Layout.
    enum class AttentionBias {
        FromConfig, // attention_bias on q, k, v and o (Llama, Qwen3, Gemma)
        QkvAlways, // q, k, v always, o never (Qwen2)
        Never, // Mistral, Phi-3
    };
    AttentionBias attentionBias = AttentionBias::FromConfig;
    bool attentionBiasDefault = false; // attention_bias when absent: gpt-oss true
    bool readsMlpBias = false; // only Llama has mlp_bias
    enum class Window {
        Ignored, // sliding_window is not read (Llama; Gemma 2 and 3 alternate layer kinds)
        Always, // every layer attends within sliding_window (Mistral, Phi-3)
        WithFlag, // only with use_sliding_window (Qwen2, Qwen3)
        ByLayerType, // layers whose layer_types entry is "sliding_attention" (Gemma 2 and 3)
    };
    Window window = Window::Ignored;
    // ByLayerType without layer_types: every layer is sliding but each
    // `slidingPeriod`-th (Gemma 2: 2, Gemma 3: 6), as the configuration class fills it.
    int slidingPeriod = 0;
    // Gemma: RMSNorm scales by (1 + weight), and the embeddings are
    // multiplied by sqrt(hidden_size).
    bool gemmaScaling = false;
    const char* activation = "silu"; // hidden_act's default; Gemma: gelu_pytorch_tanh
    bool qkNorm = false; // Qwen3, Gemma 3
    int normsPerLayer = 2; // Gemma 2 and 3: 4
    bool fusedQkv = false; // Phi-3
    // Mixture of experts: how the file counts and names its experts.
    enum class Experts {
        None, // a dense MLP
        Mixtral, // num_local_experts of intermediate_size, block_sparse_moe.experts.N.w1/w3/w2
        Qwen3Moe, // num_experts of moe_intermediate_size, mlp.experts.N.gate_proj/up_proj/down_proj
        GptOss, // num_local_experts of intermediate_size with biases, a router with a bias
    };
    Experts experts = Experts::None;
};

// The row for `modelType`; nullptr for a type Tunebench does not know.
const HfArchitecture* findHfArchitecture(const std::string& modelType);

// Llama's row: how an unknown or absent model_type is read.
const HfArchitecture& llamaArchitecture();

} // namespace tb::model
