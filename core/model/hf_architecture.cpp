#include "model/hf_architecture.h"

#include <array>

namespace tb::model {

namespace {

using Bias = HfArchitecture::AttentionBias;

HfArchitecture row(const char* type, bool tied, std::int64_t maxPositions, std::int64_t kvHeads,
    std::int64_t headDim, double eps, double theta, Bias bias)
{
    HfArchitecture arch;
    arch.modelType = type;
    arch.tieWordEmbeddings = tied;
    arch.maxPositionEmbeddings = maxPositions;
    arch.numKvHeads = kvHeads;
    arch.headDim = headDim;
    arch.rmsNormEps = eps;
    arch.ropeTheta = theta;
    arch.attentionBias = bias;
    return arch;
}

// Values from transformers 5.23's models/<type>/configuration_<type>.py.
std::array<HfArchitecture, 11> makeTable()
{
    std::array<HfArchitecture, 11> table{
        row("llama", false, 2048, 0, 0, 1e-6, 10000.0, Bias::FromConfig),
        row("mistral", false, 131072, 8, 0, 1e-6, 10000.0, Bias::Never),
        row("qwen2", false, 32768, 32, 0, 1e-6, 10000.0, Bias::QkvAlways),
        row("qwen3", false, 32768, 32, 128, 1e-6, 10000.0, Bias::FromConfig),
        row("phi3", false, 4096, 0, 0, 1e-5, 10000.0, Bias::Never),
        row("gemma", true, 8192, 16, 256, 1e-6, 10000.0, Bias::FromConfig),
        row("gemma2", true, 8192, 4, 256, 1e-6, 10000.0, Bias::FromConfig),
        row("gemma3_text", true, 131072, 4, 256, 1e-6, 1000000.0, Bias::FromConfig),
        row("mixtral", false, 131072, 8, 0, 1e-5, 1000000.0, Bias::Never),
        row("qwen3_moe", false, 32768, 4, 0, 1e-6, 10000.0, Bias::FromConfig),
        row("gpt_oss", false, 131072, 8, 64, 1e-5, 150000.0, Bias::FromConfig),
    };
    table[0].readsMlpBias = true;
    table[1].slidingWindow = 4096;
    table[1].window = HfArchitecture::Window::Always;
    table[2].window = HfArchitecture::Window::WithFlag;
    table[3].window = HfArchitecture::Window::WithFlag;
    table[4].window = HfArchitecture::Window::Always;
    table[3].qkNorm = true;
    table[4].fusedQkv = true;
    table[6].normsPerLayer = 4;
    table[7].normsPerLayer = 4;
    table[7].qkNorm = true;
    for (size_t gemma : {5, 6, 7}) {
        table[gemma].gemmaScaling = true;
        table[gemma].activation = "gelu_pytorch_tanh";
    }
    for (size_t gemma : {6, 7}) {
        table[gemma].window = HfArchitecture::Window::ByLayerType;
        table[gemma].slidingWindow = 4096;
        table[gemma].queryPreAttnScalar = 256;
    }
    table[6].slidingPeriod = 2;
    table[7].slidingPeriod = 6;
    table[7].slidingRopeTheta = 10000.0;
    table[7].hiddenSize = 2304;
    table[7].intermediateSize = 9216;
    table[7].numLayers = 26;
    table[7].numHeads = 8;
    table[7].vocabSize = 262208;
    table[8].window = HfArchitecture::Window::Always; // no default: sliding_window null
    table[8].experts = HfArchitecture::Experts::Mixtral;
    table[9].window = HfArchitecture::Window::WithFlag;
    table[9].qkNorm = true;
    table[9].experts = HfArchitecture::Experts::Qwen3Moe;
    table[10].attentionBiasDefault = true;
    table[10].window = HfArchitecture::Window::ByLayerType;
    table[10].slidingWindow = 128;
    table[10].slidingPeriod = 2;
    table[10].experts = HfArchitecture::Experts::GptOss;
    table[6].attnLogitSoftcap = 50.0;
    table[6].finalLogitSoftcap = 30.0;
    return table;
}

const std::array<HfArchitecture, 11>& table()
{
    static const std::array<HfArchitecture, 11> rows = makeTable();
    return rows;
}

} // namespace

const HfArchitecture* findHfArchitecture(const std::string& modelType)
{
    for (const HfArchitecture& arch : table()) {
        if (modelType == arch.modelType)
            return &arch;
    }
    return nullptr;
}

const HfArchitecture& llamaArchitecture()
{
    return table().front();
}

} // namespace tb::model
