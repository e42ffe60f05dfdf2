#include "train/model_config.h"

#include "common/atomic_file.h"

#include <nlohmann/json.hpp>

#include <array>
#include <filesystem>

namespace tb::train {

using common::Error;
using common::Result;
using nlohmann::json;

namespace {

constexpr std::array kModelTypes{"llama", "mistral", "qwen2"};
constexpr std::array kArchitectures{"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"};

template <size_t N> std::string joined(const std::array<const char*, N>& names)
{
    std::string out;
    for (const char* name : names)
        out += (out.empty() ? "" : ", ") + std::string(name);
    return out;
}

template <size_t N> bool contains(const std::array<const char*, N>& names, const std::string& value)
{
    for (const char* name : names) {
        if (value == name)
            return true;
    }
    return false;
}

// Reads fields of one JSON object, naming the file and the field in errors.
class Fields {
public:
    Fields(const json& object, std::string fileName, std::string prefix = {})
        : m_object(object)
        , m_fileName(std::move(fileName))
        , m_prefix(std::move(prefix))
    {
    }

    bool has(const char* key) const
    {
        const auto it = m_object.find(key);
        return it != m_object.end() && !it->is_null();
    }
    const json& raw(const char* key) const { return m_object.at(key); }

    Error error(const char* key, const std::string& what, std::string hint = {}) const
    {
        return Error::at(m_fileName, "field '" + m_prefix + key + "'", what, std::move(hint));
    }
    Error got(const char* key, const std::string& expected) const
    {
        return error(key, "got " + raw(key).dump() + ", expected " + expected);
    }

    Result<std::int64_t> positive(const char* key, std::optional<std::int64_t> fallback = {}) const
    {
        if (!has(key)) {
            if (fallback)
                return *fallback;
            return error(key, "missing", "a Llama-family config.json always has it");
        }
        const json& value = raw(key);
        if (!value.is_number_integer() || value.get<std::int64_t>() <= 0)
            return got(key, "a positive integer");
        return value.get<std::int64_t>();
    }

    Result<double> positiveNumber(const char* key, double fallback) const
    {
        if (!has(key))
            return fallback;
        const json& value = raw(key);
        if (!value.is_number() || !(value.get<double>() > 0))
            return got(key, "a positive number");
        return value.get<double>();
    }

    Result<bool> flag(const char* key, bool fallback) const
    {
        if (!has(key))
            return fallback;
        if (!raw(key).is_boolean())
            return got(key, "true or false");
        return raw(key).get<bool>();
    }

    Result<std::string> text(const char* key, const std::string& fallback) const
    {
        if (!has(key))
            return fallback;
        if (!raw(key).is_string())
            return got(key, "a string");
        return raw(key).get<std::string>();
    }

private:
    const json& m_object;
    std::string m_fileName;
    std::string m_prefix;
};

#define TB_TRY_ASSIGN(target, expression)                                                          \
    do {                                                                                           \
        auto _result = (expression);                                                               \
        if (!_result)                                                                              \
            return _result.error();                                                                \
        target = std::move(_result).value();                                                       \
    } while (false)

// rope_scaling (transformers 4.x) or rope_parameters (5.x): the type and its numbers.
Result<RopeScaling> parseRopeScaling(
    const json& object, const std::string& fileName, const std::string& field)
{
    const Fields rope(object, fileName, field + ".");
    std::string type = "default";
    if (rope.has("rope_type"))
        TB_TRY_ASSIGN(type, rope.text("rope_type", "default"));
    else if (rope.has("type"))
        TB_TRY_ASSIGN(type, rope.text("type", "default"));
    RopeScaling scaling;
    if (type == "default")
        return scaling;
    const char* typeKey = rope.has("rope_type") ? "rope_type" : "type";
    if (type != "linear" && type != "llama3")
        return rope.error(typeKey, "rope scaling type '" + type + "' is not supported",
            "supported: linear, llama3 (or none)");
    TB_TRY_ASSIGN(scaling.factor, rope.positiveNumber("factor", 0.0));
    if (!rope.has("factor"))
        return rope.error("factor", "missing", "rope scaling '" + type + "' needs a factor");
    if (type == "linear") {
        scaling.type = RopeScalingType::Linear;
        return scaling;
    }
    scaling.type = RopeScalingType::Llama3;
    for (const char* key :
        {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
        if (!rope.has(key))
            return rope.error(key, "missing", "Llama 3 rope scaling needs it");
    }
    TB_TRY_ASSIGN(scaling.lowFreqFactor, rope.positiveNumber("low_freq_factor", 1.0));
    TB_TRY_ASSIGN(scaling.highFreqFactor, rope.positiveNumber("high_freq_factor", 4.0));
    TB_TRY_ASSIGN(
        scaling.originalMaxPositionEmbeddings, rope.positive("original_max_position_embeddings"));
    if (scaling.highFreqFactor <= scaling.lowFreqFactor)
        return rope.error("high_freq_factor", "must be greater than low_freq_factor");
    return scaling;
}

Result<std::vector<std::int64_t>> tokenIds(const Fields& fields, const char* key)
{
    if (!fields.has(key))
        return std::vector<std::int64_t>{};
    const json& value = fields.raw(key);
    std::vector<std::int64_t> ids;
    if (value.is_number_integer())
        ids.push_back(value.get<std::int64_t>());
    else if (value.is_array()) {
        for (const json& id : value) {
            if (!id.is_number_integer())
                return fields.got(key, "a token id or a list of token ids");
            ids.push_back(id.get<std::int64_t>());
        }
    } else {
        return fields.got(key, "a token id or a list of token ids");
    }
    return ids;
}

// Features that change the computation in ways this runner does not do.
common::Status refuseUnsupported(const Fields& fields, const LlamaConfig& config)
{
    if (fields.has("quantization_config"))
        return fields.error("quantization_config", "quantised weights are not supported",
            "use the unquantised checkpoint");
    std::string activation = "silu";
    for (const char* key : {"hidden_act", "hidden_activation"}) {
        if (fields.has(key)) {
            TB_TRY_ASSIGN(activation, fields.text(key, "silu"));
            if (activation != "silu")
                return fields.error(key, "activation '" + activation + "' is not supported",
                    "Llama-family MLPs use silu (SwiGLU)");
        }
    }
    if (fields.has("partial_rotary_factor")) {
        const json& value = fields.raw("partial_rotary_factor");
        if (!value.is_number() || value.get<double>() != 1.0)
            return fields.got("partial_rotary_factor", "1.0 (rotary on the whole head)");
    }
    if (config.modelType == "qwen2" && fields.has("use_sliding_window")) {
        bool sliding = false;
        TB_TRY_ASSIGN(sliding, fields.flag("use_sliding_window", false));
        if (sliding)
            return fields.error(
                "use_sliding_window", "Qwen2 sliding-window layers are not supported");
    }
    if (fields.has("layer_types")) {
        const json& types = fields.raw("layer_types");
        if (!types.is_array())
            return fields.got("layer_types", "a list of layer types");
        for (const json& type : types) {
            const bool full = type == "full_attention";
            const bool sliding = type == "sliding_attention" && config.modelType == "mistral";
            if (!full && !sliding)
                return fields.error("layer_types",
                    "layer type " + type.dump() + " is not supported", "supported: full_attention");
        }
    }
    return common::Ok{};
}

} // namespace

std::int64_t LlamaConfig::parameterCount() const
{
    const std::int64_t qWidth = numHeads * headDim;
    const std::int64_t kvWidth = numKvHeads * headDim;
    std::int64_t perLayer = hiddenSize * qWidth + 2 * hiddenSize * kvWidth + qWidth * hiddenSize;
    if (qkvBias)
        perLayer += qWidth + 2 * kvWidth;
    if (outputBias)
        perLayer += hiddenSize;
    perLayer += 3 * hiddenSize * intermediateSize;
    if (mlpBias)
        perLayer += 2 * intermediateSize + hiddenSize;
    perLayer += 2 * hiddenSize;
    const std::int64_t embedding = vocabSize * hiddenSize;
    return embedding + numLayers * perLayer + hiddenSize + (tieWordEmbeddings ? 0 : embedding);
}

Result<LlamaConfig> parseLlamaConfig(std::string_view text, const std::string& fileName)
{
    json root;
    try {
        root = json::parse(text);
    } catch (const json::exception& e) {
        return Error::at(fileName, "", std::string("invalid JSON: ") + e.what());
    }
    if (!root.is_object())
        return Error::at(fileName, "", "expected a JSON object");
    const Fields fields(root, fileName);
    LlamaConfig config;

    TB_TRY_ASSIGN(config.modelType, fields.text("model_type", ""));
    if (!contains(kModelTypes, config.modelType))
        return fields.has("model_type")
            ? fields.error("model_type", "'" + config.modelType + "' is not supported",
                "supported: " + joined(kModelTypes))
            : fields.error("model_type", "missing", "supported: " + joined(kModelTypes));
    if (fields.has("architectures")) {
        const json& list = fields.raw("architectures");
        if (!list.is_array() || list.size() != 1 || !list[0].is_string())
            return fields.got("architectures", "a list with one architecture name");
        config.architecture = list[0].get<std::string>();
        if (!contains(kArchitectures, config.architecture))
            return fields.error("architectures", "'" + config.architecture + "' is not supported",
                "supported: " + joined(kArchitectures));
    }

    TB_TRY_ASSIGN(config.vocabSize, fields.positive("vocab_size"));
    TB_TRY_ASSIGN(config.hiddenSize, fields.positive("hidden_size"));
    TB_TRY_ASSIGN(config.intermediateSize, fields.positive("intermediate_size"));
    TB_TRY_ASSIGN(config.numLayers, fields.positive("num_hidden_layers"));
    TB_TRY_ASSIGN(config.numHeads, fields.positive("num_attention_heads"));
    TB_TRY_ASSIGN(config.numKvHeads, fields.positive("num_key_value_heads", config.numHeads));
    if (config.numHeads % config.numKvHeads != 0)
        return fields.error("num_key_value_heads",
            "got " + std::to_string(config.numKvHeads)
                + ", expected a divisor of num_attention_heads (" + std::to_string(config.numHeads)
                + ")");
    if (!fields.has("head_dim") && config.hiddenSize % config.numHeads != 0)
        return fields.error("hidden_size",
            "got " + std::to_string(config.hiddenSize)
                + ", not a multiple of num_attention_heads and no head_dim given");
    TB_TRY_ASSIGN(config.headDim, fields.positive("head_dim", config.hiddenSize / config.numHeads));
    if (config.headDim % 2 != 0)
        return fields.error("head_dim",
            "got " + std::to_string(config.headDim) + ", rotary embeddings need an even head size");
    const std::int64_t defaultMaxPositions = config.modelType == "llama" ? 2048
        : config.modelType == "qwen2"                                    ? 32768
                                                                         : 131072;
    TB_TRY_ASSIGN(config.maxPositionEmbeddings,
        fields.positive("max_position_embeddings", defaultMaxPositions));
    TB_TRY_ASSIGN(config.rmsNormEps, fields.positiveNumber("rms_norm_eps", 1e-6));
    TB_TRY_ASSIGN(config.tieWordEmbeddings, fields.flag("tie_word_embeddings", false));

    bool attentionBias = false;
    TB_TRY_ASSIGN(attentionBias, fields.flag("attention_bias", false));
    config.qkvBias = attentionBias || config.modelType == "qwen2";
    config.outputBias = attentionBias && config.modelType == "llama";
    TB_TRY_ASSIGN(config.mlpBias, fields.flag("mlp_bias", false));

    if (fields.has("rope_parameters")) {
        if (!fields.raw("rope_parameters").is_object())
            return fields.got("rope_parameters", "an object");
        const Fields rope(fields.raw("rope_parameters"), fileName, "rope_parameters.");
        TB_TRY_ASSIGN(config.ropeTheta, rope.positiveNumber("rope_theta", 10000.0));
        TB_TRY_ASSIGN(config.ropeScaling,
            parseRopeScaling(fields.raw("rope_parameters"), fileName, "rope_parameters"));
    } else {
        TB_TRY_ASSIGN(config.ropeTheta, fields.positiveNumber("rope_theta", 10000.0));
        if (fields.has("rope_scaling")) {
            if (!fields.raw("rope_scaling").is_object())
                return fields.got("rope_scaling", "an object or null");
            TB_TRY_ASSIGN(config.ropeScaling,
                parseRopeScaling(fields.raw("rope_scaling"), fileName, "rope_scaling"));
        }
    }

    if (config.modelType == "mistral" && fields.has("sliding_window")) {
        std::int64_t window = 0;
        TB_TRY_ASSIGN(window, fields.positive("sliding_window"));
        config.slidingWindow = window;
    }
    if (auto status = refuseUnsupported(fields, config); !status)
        return status.error();

    if (fields.has("bos_token_id")) {
        std::vector<std::int64_t> bos;
        TB_TRY_ASSIGN(bos, tokenIds(fields, "bos_token_id"));
        if (bos.size() != 1)
            return fields.got("bos_token_id", "one token id");
        config.bosTokenId = bos.front();
    }
    TB_TRY_ASSIGN(config.eosTokenIds, tokenIds(fields, "eos_token_id"));
    for (const char* key : {"torch_dtype", "dtype"}) {
        if (fields.has(key) && fields.raw(key).is_string())
            config.torchDtype = fields.raw(key).get<std::string>();
    }
    return config;
}

Result<LlamaConfig> loadLlamaConfig(const std::string& path)
{
    std::error_code ec;
    const std::string file = std::filesystem::is_directory(path, ec)
        ? (std::filesystem::path(path) / "config.json").string()
        : path;
    const Result<std::string> text = common::readFile(file);
    if (!text)
        return text.error();
    return parseLlamaConfig(*text, file);
}

} // namespace tb::train
