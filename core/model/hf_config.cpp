#include "model/hf_config.h"

#include "common/atomic_file.h"
#include "common/json_text.h"
#include "common/text.h"
#include "model/hf_architecture.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

namespace tb::model {

namespace {

using nlohmann::json;

std::string typeName(const json& value)
{
    switch (value.type()) {
    case json::value_t::null:
        return "null";
    case json::value_t::boolean:
        return value.get<bool>() ? "true" : "false";
    case json::value_t::string:
        return "\"" + value.get<std::string>() + "\"";
    case json::value_t::object:
        return "an object";
    case json::value_t::array:
        return "an array";
    default:
        return value.dump();
    }
}

// Reads the fields of one JSON object; every problem names the file and the
// field (with `prefix` for nested objects) and is collected, not returned.
struct Reader {
    const json& object;
    const std::string& origin;
    std::vector<std::string>& problems;
    std::string prefix;

    void problem(const std::string& field, const std::string& what)
    {
        problems.push_back(origin + ": field '" + prefix + field + "': " + what);
    }

    const json* find(const char* field) const
    {
        const auto it = object.find(field);
        return it == object.end() || it->is_null() ? nullptr : &*it;
    }
    bool has(const char* field) const { return find(field) != nullptr; }

    // A positive integer; absent or null gives nullopt (and a problem if required).
    std::optional<std::int64_t> integer(const char* field, bool required)
    {
        const json* value = find(field);
        if (!value) {
            if (required)
                problem(field, "missing, expected a positive integer");
            return std::nullopt;
        }
        const bool fits = value->is_number_integer()
            || (value->is_number_unsigned()
                && value->get<std::uint64_t>() <= std::uint64_t(INT64_MAX));
        if (!fits || value->get<std::int64_t>() <= 0) {
            problem(field, "got " + typeName(*value) + ", expected a positive integer");
            return std::nullopt;
        }
        return value->get<std::int64_t>();
    }

    std::optional<double> positiveNumber(const char* field)
    {
        const json* value = find(field);
        if (!value)
            return std::nullopt;
        if (!value->is_number() || !(value->get<double>() > 0)) {
            problem(field, "got " + typeName(*value) + ", expected a positive number");
            return std::nullopt;
        }
        return value->get<double>();
    }

    std::optional<bool> boolean(const char* field)
    {
        const json* value = find(field);
        if (!value)
            return std::nullopt;
        if (!value->is_boolean()) {
            problem(field, "got " + typeName(*value) + ", expected true or false");
            return std::nullopt;
        }
        return value->get<bool>();
    }

    std::optional<std::string> text(const char* field)
    {
        const json* value = find(field);
        if (!value)
            return std::nullopt;
        if (!value->is_string()) {
            problem(field, "got " + typeName(*value) + ", expected text");
            return std::nullopt;
        }
        return value->get<std::string>();
    }

    // A token id or a list of them.
    std::vector<std::int64_t> tokenIds(const char* field)
    {
        std::vector<std::int64_t> ids;
        const json* value = find(field);
        if (!value)
            return ids;
        const json list = value->is_array() ? *value : json::array({*value});
        for (const json& id : list) {
            if (!id.is_number_integer()) {
                problem(field, "got " + typeName(*value) + ", expected a token id or a list of them");
                return {};
            }
            ids.push_back(id.get<std::int64_t>());
        }
        return ids;
    }

    std::vector<std::string> textList(const char* field)
    {
        std::vector<std::string> items;
        const json* value = find(field);
        if (!value)
            return items;
        for (const json& item : value->is_array() ? *value : json::array({nullptr})) {
            if (!item.is_string()) {
                problem(field, "got " + typeName(*value) + ", expected a list of names");
                return {};
            }
            items.push_back(item.get<std::string>());
        }
        return items;
    }
};

// rope_scaling (transformers 4.x) or rope_parameters (5.x): the type and its numbers.
RopeScaling readRopeScaling(Reader& rope)
{
    RopeScaling scaling;
    const char* typeKey = rope.has("rope_type") ? "rope_type" : "type";
    scaling.typeName = rope.text(typeKey).value_or("default");
    scaling.typeField = rope.prefix + typeKey;
    scaling.factor = rope.positiveNumber("factor").value_or(1.0);
    if (scaling.typeName == "default")
        return scaling;
    scaling.type = scaling.typeName == "linear" ? RopeScalingType::Linear
        : scaling.typeName == "llama3"          ? RopeScalingType::Llama3
        : scaling.typeName == "longrope"        ? RopeScalingType::LongRope
                                                : RopeScalingType::Other;
    if (scaling.type == RopeScalingType::LongRope)
        return scaling; // readLongRope, once the positions are known
    if (scaling.type != RopeScalingType::Other && !rope.has("factor"))
        rope.problem("factor", "missing, rope scaling '" + scaling.typeName + "' needs a factor");
    if (scaling.type != RopeScalingType::Llama3)
        return scaling;
    for (const char* key :
        {"low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
        if (!rope.has(key))
            rope.problem(key, "missing, Llama 3 rope scaling needs it");
    }
    scaling.lowFreqFactor = rope.positiveNumber("low_freq_factor").value_or(1.0);
    scaling.highFreqFactor = rope.positiveNumber("high_freq_factor").value_or(4.0);
    scaling.originalMaxPositionEmbeddings =
        rope.integer("original_max_position_embeddings", false).value_or(0);
    if (scaling.highFreqFactor <= scaling.lowFreqFactor)
        rope.problem("high_freq_factor", "must be greater than low_freq_factor");
    return scaling;
}

std::vector<double> factorList(Reader& rope, const char* field)
{
    std::vector<double> factors;
    const json* list = rope.find(field);
    if (!list) {
        rope.problem(field, "missing, LongRoPE needs one factor per rotary frequency");
        return factors;
    }
    for (const json& item : list->is_array() ? *list : json::array({nullptr})) {
        if (!item.is_number() || !(item.get<double>() > 0)) {
            rope.problem(field, "got " + typeName(*list) + ", expected a list of positive numbers");
            return {};
        }
        factors.push_back(item.get<double>());
    }
    return factors;
}

// LongRoPE (Ding et al. 2024) as transformers' _compute_longrope_parameters:
// its factor defaults to max_position_embeddings / original, and the
// attention factor to sqrt(1 + ln(factor) / ln(original)).
void readLongRope(Reader& rope, Reader& top, const HfConfig& config, RopeScaling& scaling)
{
    scaling.shortFactor = factorList(rope, "short_factor");
    scaling.longFactor = factorList(rope, "long_factor");
    std::optional<std::int64_t> original = rope.integer("original_max_position_embeddings", false);
    if (!original)
        original = top.integer("original_max_position_embeddings", false);
    if (!original) {
        rope.problem("original_max_position_embeddings", "missing, LongRoPE needs it");
        return;
    }
    scaling.originalMaxPositionEmbeddings = *original;
    scaling.factor = rope.positiveNumber("factor").value_or(
        double(config.maxPositionEmbeddings) / double(*original));
    const double fallback = scaling.factor <= 1.0
        ? 1.0
        : std::sqrt(1.0 + std::log(scaling.factor) / std::log(double(*original)));
    scaling.attentionFactor = rope.positiveNumber("attention_factor").value_or(fallback);
}

// One rope object: its theta (when it has one) and its scaling.
void readRopeObject(Reader& rope, Reader& top, HfConfig& config, double& theta,
    RopeScaling& scaling)
{
    if (rope.has("rope_theta"))
        theta = rope.positiveNumber("rope_theta").value_or(theta);
    scaling = readRopeScaling(rope);
    if (scaling.type == RopeScalingType::LongRope)
        readLongRope(rope, top, config, scaling);
}

// Gemma 3 under transformers 5: rope_parameters holds one object per layer type.
bool readRopePerLayerType(Reader& parameters, Reader& top, HfConfig& config)
{
    const json* full = parameters.find("full_attention");
    const json* sliding = parameters.find("sliding_attention");
    if (!full && !sliding)
        return false;
    const auto read = [&](const json* object, const char* type, double& theta, RopeScaling& scaling) {
        if (!object)
            return;
        if (!object->is_object()) {
            parameters.problem(type, "got " + typeName(*object) + ", expected an object");
            return;
        }
        Reader rope{*object, parameters.origin, parameters.problems,
            parameters.prefix + type + "."};
        readRopeObject(rope, top, config, theta, scaling);
    };
    read(full, "full_attention", config.ropeTheta, config.ropeScaling);
    if (config.slidingRopeTheta)
        read(sliding, "sliding_attention", *config.slidingRopeTheta, config.slidingRopeScaling);
    return true;
}

void readRope(Reader& reader, HfConfig& config, const HfArchitecture& arch)
{
    config.ropeTheta = reader.positiveNumber("rope_theta").value_or(arch.ropeTheta);
    if (arch.slidingRopeTheta > 0)
        config.slidingRopeTheta =
            reader.positiveNumber("rope_local_base_freq").value_or(arch.slidingRopeTheta);
    for (const char* field : {"rope_parameters", "rope_scaling"}) {
        const json* object = reader.find(field);
        if (!object)
            continue;
        if (!object->is_object()) {
            reader.problem(field, "got " + typeName(*object) + ", expected an object or null");
            return;
        }
        Reader rope{*object, reader.origin, reader.problems, std::string(field) + "."};
        if (arch.slidingRopeTheta > 0 && readRopePerLayerType(rope, reader, config))
            return;
        readRopeObject(rope, reader, config, config.ropeTheta, config.ropeScaling);
        // transformers 5 keeps Phi-4-mini's partial_rotary_factor here.
        if (const json* partial = rope.find("partial_rotary_factor"); partial && partial->is_number())
            config.partialRotaryFactor = partial->get<double>();
        return;
    }
}

void readShape(Reader& reader, HfConfig& config, const HfArchitecture& arch)
{
    config.hiddenSize = reader.integer("hidden_size", true).value_or(0);
    config.intermediateSize = reader.integer("intermediate_size", true).value_or(0);
    config.numLayers = reader.integer("num_hidden_layers", true).value_or(0);
    config.numHeads = reader.integer("num_attention_heads", true).value_or(0);
    config.vocabSize = reader.integer("vocab_size", true).value_or(0);
    config.maxPositionEmbeddings =
        reader.integer("max_position_embeddings", false).value_or(arch.maxPositionEmbeddings);
    const bool kvGiven = reader.has("num_key_value_heads");
    config.numKvHeads = reader.integer("num_key_value_heads", false)
                            .value_or(arch.numKvHeads > 0 ? arch.numKvHeads : config.numHeads);
    if (config.numHeads > 0 && config.numKvHeads > 0 && config.numHeads % config.numKvHeads != 0)
        reader.problem("num_key_value_heads",
            "got " + std::to_string(config.numKvHeads)
                + (kvGiven ? "" : " (the " + config.modelType + " default)")
                + ", expected a divisor of num_attention_heads ("
                + std::to_string(config.numHeads) + ")");
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
    config.tieWordEmbeddings = reader.boolean("tie_word_embeddings").value_or(arch.tieWordEmbeddings);
    const bool attentionBias = reader.boolean("attention_bias").value_or(false);
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
    readRope(reader, config, arch);
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
    config.queryPreAttnScalar =
        arch.queryPreAttnScalar > 0 ? numberOrOff(reader, "query_pre_attn_scalar", arch.queryPreAttnScalar) : 0;
    config.attnLogitSoftcap = numberOrOff(reader, "attn_logit_softcapping", arch.attnLogitSoftcap);
    config.finalLogitSoftcap = numberOrOff(reader, "final_logit_softcapping", arch.finalLogitSoftcap);
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
            config.layerTypes.push_back(
                (i + 1) % period ? "sliding_attention" : "full_attention");
    }
    if (!config.layerTypes.empty()
        && std::int64_t(config.layerTypes.size()) != config.numLayers)
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
        if (value && value->is_number() && value->get<double>() != 0 && config.dropoutField.empty()) {
            config.dropoutField = field;
            config.dropout = value->get<double>();
        }
    }
    if (reader.has("partial_rotary_factor") && config.partialRotaryFactor == 1.0) {
        const json& factor = *reader.find("partial_rotary_factor");
        if (factor.is_number())
            config.partialRotaryFactor = factor.get<double>();
        else
            reader.problem("partial_rotary_factor", "got " + typeName(factor) + ", expected a number");
    }
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

common::Status refuseMixtureOfExperts(const json& object, const std::string& origin)
{
    for (const char* moeKey : {"num_local_experts", "num_experts", "n_routed_experts"}) {
        const auto it = object.find(moeKey);
        if (it != object.end() && !it->is_null() && !(it->is_number() && it->get<double>() <= 1))
            return common::Error::at(origin, std::string("field '") + moeKey + "'",
                "mixture-of-experts models are not supported (" + it->dump() + " experts)",
                "use a dense decoder (Llama, Mistral, Qwen2, Phi-3, Gemma)");
    }
    return common::Ok{};
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
        if (inner.ok()) {
            inner.value().fromTextConfig = true;
            inner.value().warnings.push_back(
                "read the decoder from text_config; vision or audio towers are not counted");
        }
        return inner;
    }
    if (const common::Status moe = refuseMixtureOfExperts(object, origin); !moe)
        return moe.error();

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
        object = common::parseJson(text);
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
