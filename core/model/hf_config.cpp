#include "model/hf_config.h"

#include "common/atomic_file.h"
#include "common/json_document.h"
#include "common/text.h"
#include "model/hf_architecture.h"
#include "model/hf_config_reader.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace tb::model {

namespace {

using detail::json;
using detail::Reader;
using detail::typeName;

void readShape(Reader& reader, HfConfig& config, const HfArchitecture& arch)
{
    const auto shape = [&](const char* field, std::int64_t fallback) {
        return reader.integer(field, fallback == 0).value_or(fallback);
    };
    config.hiddenSize = shape("hidden_size", arch.hiddenSize);
    config.intermediateSize = shape("intermediate_size", arch.intermediateSize);
    config.numLayers = shape("num_hidden_layers", arch.numLayers);
    config.numHeads = shape("num_attention_heads", arch.numHeads);
    config.vocabSize = shape("vocab_size", arch.vocabSize);
    config.maxPositionEmbeddings =
        reader.integer("max_position_embeddings", false).value_or(arch.maxPositionEmbeddings);
    const bool kvGiven = reader.has("num_key_value_heads");
    config.numKvHeads = reader.integer("num_key_value_heads", false)
                            .value_or(arch.numKvHeads > 0 ? arch.numKvHeads : config.numHeads);
    if (config.numHeads > 0 && config.numKvHeads > 0 && config.numHeads % config.numKvHeads != 0)
        reader.problem("num_key_value_heads",
            "got " + std::to_string(config.numKvHeads)
                + (kvGiven ? "" : " (the " + config.modelType + " default)")
                + ", expected a divisor of num_attention_heads (" + std::to_string(config.numHeads)
                + ")");
    if (const auto headDim = reader.integer("head_dim", false)) {
        config.headDim = *headDim;
    } else if (arch.headDim > 0) {
        config.headDim = arch.headDim;
    } else if (config.numHeads > 0) {
        if (config.hiddenSize % config.numHeads != 0)
            reader.problem("num_attention_heads",
                std::to_string(config.numHeads) + " does not divide hidden_size "
                    + std::to_string(config.hiddenSize) + " and there is no head_dim");
        config.headDim = config.hiddenSize / config.numHeads;
    }
}

void readLayout(Reader& reader, HfConfig& config, const HfArchitecture& arch)
{
    config.tieWordEmbeddings =
        reader.boolean("tie_word_embeddings").value_or(arch.tieWordEmbeddings);
    const bool attentionBias = reader.boolean("attention_bias").value_or(arch.attentionBiasDefault);
    const bool mlpBias = reader.boolean("mlp_bias").value_or(false);
    using Bias = HfArchitecture::AttentionBias;
    config.qkvBias = arch.attentionBias == Bias::QkvAlways
        || (arch.attentionBias == Bias::FromConfig && attentionBias);
    config.outputBias = arch.attentionBias == Bias::FromConfig && attentionBias;
    config.mlpBias = arch.readsMlpBias && mlpBias;
    config.qkNorm = arch.qkNorm;
    config.normsPerLayer = arch.normsPerLayer;
    config.fusedQkv = arch.fusedQkv;
    config.rmsNormEps = reader.positiveNumber("rms_norm_eps").value_or(arch.rmsNormEps);
    detail::readRope(reader, config, arch);
}

// A number the architecture gives when the field is absent and that null
// turns off (0): Gemma 2's softcaps.
double numberOrOff(Reader& reader, const char* field, double absent)
{
    if (!reader.object.contains(field))
        return absent;
    return reader.positiveNumber(field).value_or(0.0);
}

void readGemmaScaling(Reader& reader, HfConfig& config, const HfArchitecture& arch)
{
    config.gemmaScaling = arch.gemmaScaling;
    config.queryPreAttnScalar = arch.queryPreAttnScalar > 0
        ? numberOrOff(reader, "query_pre_attn_scalar", arch.queryPreAttnScalar)
        : 0;
    config.attnLogitSoftcap = numberOrOff(reader, "attn_logit_softcapping", arch.attnLogitSoftcap);
    config.finalLogitSoftcap =
        numberOrOff(reader, "final_logit_softcapping", arch.finalLogitSoftcap);
    config.bidirectional = reader.boolean("use_bidirectional_attention").value_or(false);
}

// layer_types as written, or as the configuration class fills it: sliding
// but every `slidingPeriod`-th layer.
void readLayerTypes(Reader& reader, HfConfig& config, const HfArchitecture& arch)
{
    config.layerTypes = reader.textList("layer_types");
    if (config.layerTypes.empty() && arch.slidingPeriod > 0) {
        // Gemma 3 files written before layer_types say sliding_window_pattern.
        const std::int64_t period =
            reader.integer("sliding_window_pattern", false).value_or(arch.slidingPeriod);
        for (std::int64_t i = 0; i < config.numLayers; ++i)
            config.layerTypes.push_back((i + 1) % period ? "sliding_attention" : "full_attention");
    }
    if (!config.layerTypes.empty() && std::int64_t(config.layerTypes.size()) != config.numLayers)
        reader.problem("layer_types",
            "got " + std::to_string(config.layerTypes.size()) + " entries, expected one per layer ("
                + std::to_string(config.numLayers) + ")");
}

void readAttentionWindow(Reader& reader, HfConfig& config, const HfArchitecture& arch)
{
    readLayerTypes(reader, config, arch);
    const bool given = reader.object.contains("sliding_window");
    const std::optional<std::int64_t> window = reader.integer("sliding_window", false);
    config.slidingWindowLayers = reader.boolean("use_sliding_window").value_or(false);
    using Window = HfArchitecture::Window;
    if (arch.window == Window::Ignored
        || (arch.window == Window::WithFlag && !config.slidingWindowLayers))
        return;
    if (window)
        config.slidingWindow = window;
    else if (!given && arch.slidingWindow > 0)
        config.slidingWindow = arch.slidingWindow;
    if (!config.slidingWindow)
        return;
    for (std::int64_t i = 0; i < config.numLayers; ++i) {
        const bool byType = arch.window == Window::ByLayerType;
        config.windowedLayers.push_back(!byType
            || (size_t(i) < config.layerTypes.size()
                && config.layerTypes[size_t(i)] == "sliding_attention"));
    }
}

// The model's class, special tokens and dtype.
void readClassAndTokens(Reader& reader, HfConfig& config)
{
    if (const json* architectures = reader.find("architectures")) {
        if (!architectures->is_array() || architectures->size() != 1
            || !architectures->front().is_string())
            reader.problem("architectures",
                "got " + architectures->dump() + ", expected a list with one architecture name");
        else
            config.architecture = architectures->front().get<std::string>();
    }
    if (reader.has("bos_token_id")) {
        const std::vector<std::int64_t> bos = reader.tokenIds("bos_token_id");
        if (bos.size() == 1)
            config.bosTokenId = bos.front();
        else if (!bos.empty())
            reader.problem("bos_token_id", "got a list, expected one token id");
    }
    config.eosTokenIds = reader.tokenIds("eos_token_id");
    for (const char* field : {"torch_dtype", "dtype"}) {
        if (const json* dtype = reader.find(field); dtype && dtype->is_string())
            config.torchDtype = dtype->get<std::string>();
    }
}

void readRunnerFacts(Reader& reader, HfConfig& config, const HfArchitecture& arch)
{
    // The first given; Gemma 2 and 3 read hidden_activation only, and their
    // files carry both.
    config.activation = arch.activation;
    for (const char* field : {"hidden_activation", "hidden_act"}) {
        if (const std::optional<std::string> activation = reader.text(field)) {
            config.activation = *activation;
            config.activationField = field;
            break;
        }
    }
    config.quantized = reader.has("quantization_config");
    for (const char* field : {"attention_dropout", "resid_pdrop", "embd_pdrop"}) {
        const json* value = reader.find(field);
        if (value && value->is_number() && value->get<double>() != 0
            && config.dropoutField.empty()) {
            config.dropoutField = field;
            config.dropout = value->get<double>();
        }
    }
    if (reader.has("partial_rotary_factor") && config.partialRotaryFactor == 1.0) {
        const json& factor = *reader.find("partial_rotary_factor");
        if (factor.is_number())
            config.partialRotaryFactor = factor.get<double>();
        else
            reader.problem(
                "partial_rotary_factor", "got " + typeName(factor) + ", expected a number");
    }
    readClassAndTokens(reader, config);
}

const HfArchitecture& readModelType(Reader& reader, HfConfig& config)
{
    if (const json* type = reader.find("model_type")) {
        if (type->is_string())
            config.modelType = type->get<std::string>();
        else
            reader.problem("model_type", "got " + typeName(*type) + ", expected text");
    } else {
        config.modelType = "llama";
        config.warnings.push_back("no model_type: read as a Llama-style decoder");
    }
    if (const HfArchitecture* arch = findHfArchitecture(config.modelType))
        return *arch;
    config.warnings.push_back("model_type '" + config.modelType
        + "' is not one Tunebench knows; read as a Llama-style decoder "
          "(RMSNorm, gated MLP): check the parameter count");
    return llamaArchitecture();
}

// What a multimodal config keeps outside its text_config and the language
// model still needs: the model's class, its special tokens, its dtype, and
// whether its head is tied to the embedding (Gemma3ForConditionalGeneration
// ties it by default).
void adoptMultimodalFacts(const json& object, HfConfig& config, std::vector<std::string>& problems)
{
    Reader reader{object, config.source, problems, {}};
    HfConfig outer;
    readClassAndTokens(reader, outer);
    config.fromTextConfig = true;
    if (const json* type = reader.find("model_type"); type && type->is_string())
        config.multimodalType = type->get<std::string>();
    config.architecture = outer.architecture;
    if (config.eosTokenIds.empty())
        config.eosTokenIds = outer.eosTokenIds;
    if (!config.bosTokenId)
        config.bosTokenId = outer.bosTokenId;
    if (config.torchDtype.empty())
        config.torchDtype = outer.torchDtype;
    if (const std::optional<bool> tied = reader.boolean("tie_word_embeddings"))
        config.tieWordEmbeddings = *tied;
}

common::Result<HfConfig> configFromObject(
    const json& object, const std::string& origin, const std::string& name, int depth)
{
    if (!object.is_object())
        return common::Error::at(origin, {}, "expected a JSON object at the top level");

    // Multimodal configs keep the decoder under text_config.
    if (const auto text = object.find("text_config");
        text != object.end() && text->is_object() && depth == 0) {
        common::Result<HfConfig> inner = configFromObject(*text, origin, name, depth + 1);
        if (!inner.ok())
            return inner;
        std::vector<std::string> problems;
        adoptMultimodalFacts(object, inner.value(), problems);
        if (!problems.empty())
            return common::Error{common::joinLines(problems), {}};
        inner.value().warnings.push_back(
            "read the decoder from text_config; vision or audio towers are not counted");
        return inner;
    }

    std::vector<std::string> problems;
    Reader reader{object, origin, problems, {}};
    HfConfig config;
    config.name = name;
    config.source = origin;
    if (const json* repo = reader.find("_name_or_path"); repo && repo->is_string())
        config.hfRepoId = repo->get<std::string>();
    const HfArchitecture& arch = readModelType(reader, config);
    readShape(reader, config, arch);
    readLayout(reader, config, arch);
    readAttentionWindow(reader, config, arch);
    readGemmaScaling(reader, config, arch);
    detail::readExperts(reader, config, arch);
    readRunnerFacts(reader, config, arch);

    if (!problems.empty())
        return common::Error{common::joinLines(problems), {}};
    if (const common::Status valid = validateModelSpec(config, origin); !valid)
        return valid.error();
    return config;
}

} // namespace

common::Result<HfConfig> parseHfModelConfig(std::string_view text, const std::string& origin)
{
    json object;
    try {
        object = common::parseJsonDocument(text);
    } catch (const json::parse_error& e) {
        return common::Error::at(
            origin, "byte " + std::to_string(e.byte), "not valid JSON: " + std::string(e.what()));
    } catch (const std::exception& e) {
        return common::Error::at(origin, {}, std::string("not valid JSON: ") + e.what());
    }
    std::string name = std::filesystem::path(origin).parent_path().filename().string();
    if (name.empty())
        name = std::filesystem::path(origin).stem().string();
    try {
        return configFromObject(object, origin, name, 0);
    } catch (const std::exception& e) {
        // nlohmann throws on type mismatches we did not foresee.
        return common::Error::at(origin, {}, std::string("unexpected content: ") + e.what());
    }
}

common::Result<HfConfig> readHfModelConfig(const std::string& path)
{
    std::error_code ec;
    std::string file = path;
    if (std::filesystem::is_directory(path, ec))
        file = (std::filesystem::path(path) / "config.json").string();
    const common::Result<std::string> text = common::readFile(file);
    if (!text)
        return text.error();
    return parseHfModelConfig(*text, file);
}

namespace {

common::Result<ModelSpec> specOf(common::Result<HfConfig> config)
{
    if (!config)
        return config.error();
    return ModelSpec(std::move(config).value());
}

} // namespace

common::Result<ModelSpec> parseHfConfig(std::string_view json, const std::string& origin)
{
    return specOf(parseHfModelConfig(json, origin));
}

common::Result<ModelSpec> readHfConfig(const std::string& path)
{
    return specOf(readHfModelConfig(path));
}

} // namespace tb::model
