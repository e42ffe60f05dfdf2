#include "model/hf_config.h"

#include "common/atomic_file.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

namespace tb::model {

namespace {

using nlohmann::json;

// Model types whose layout Tunebench knows; others are read as a Llama-style
// decoder with a warning.
const std::set<std::string> kKnownTypes = {
    "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text"};

std::string typeName(const json& value)
{
    switch (value.type()) {
    case json::value_t::null:
        return "null";
    case json::value_t::boolean:
        return value.get<bool>() ? "true" : "false";
    case json::value_t::string:
        return "\"" + value.get<std::string>() + "\"";
    case json::value_t::number_float:
        return value.dump();
    case json::value_t::object:
        return "an object";
    case json::value_t::array:
        return "an array";
    default:
        return value.dump();
    }
}

struct Reader {
    const json& object;
    const std::string& origin;
    std::vector<std::string> problems;

    void problem(const std::string& field, const std::string& what)
    {
        problems.push_back(origin + ": field '" + field + "': " + what);
    }

    // An integer field; absent or null gives nullopt (and a problem if required).
    std::optional<std::int64_t> integer(const char* field, bool required)
    {
        const auto it = object.find(field);
        if (it == object.end() || it->is_null()) {
            if (required)
                problem(field, "missing, expected a positive integer");
            return std::nullopt;
        }
        if (it->is_number_unsigned() || it->is_number_integer()) {
            const std::int64_t value = it->get<std::int64_t>();
            if (value <= 0
                || (it->is_number_unsigned()
                    && it->get<std::uint64_t>() > std::uint64_t(INT64_MAX))) {
                problem(field, "got " + it->dump() + ", expected a positive integer");
                return std::nullopt;
            }
            return value;
        }
        problem(field, "got " + typeName(*it) + ", expected a positive integer");
        return std::nullopt;
    }

    std::optional<bool> boolean(const char* field)
    {
        const auto it = object.find(field);
        if (it == object.end() || it->is_null())
            return std::nullopt;
        if (!it->is_boolean()) {
            problem(field, "got " + typeName(*it) + ", expected true or false");
            return std::nullopt;
        }
        return it->get<bool>();
    }
};

common::Result<ModelSpec> specFromObject(
    const json& object, const std::string& origin, const std::string& name, int depth)
{
    if (!object.is_object())
        return common::Error::at(origin, {}, "expected a JSON object at the top level");

    // Multimodal configs keep the decoder under text_config.
    if (const auto text = object.find("text_config");
        text != object.end() && text->is_object() && depth == 0) {
        common::Result<ModelSpec> inner = specFromObject(*text, origin, name, depth + 1);
        if (inner.ok())
            inner.value().warnings.push_back(
                "read the decoder from text_config; vision or audio towers are not counted");
        return inner;
    }

    for (const char* moeKey : {"num_local_experts", "num_experts", "n_routed_experts"}) {
        const auto it = object.find(moeKey);
        if (it != object.end() && !it->is_null() && !(it->is_number() && it->get<double>() <= 1))
            return common::Error::at(origin, std::string("field '") + moeKey + "'",
                "mixture-of-experts models are not supported by the planner (" + it->dump()
                    + " experts)",
                "plan a dense decoder (Llama, Mistral, Qwen2, Phi-3, Gemma)");
    }

    Reader reader{object, origin, {}};
    ModelSpec spec;
    spec.name = name;
    spec.source = origin;
    if (const auto it = object.find("model_type"); it != object.end()) {
        if (it->is_string())
            spec.modelType = it->get<std::string>();
        else
            reader.problem("model_type", "got " + typeName(*it) + ", expected text");
    } else {
        spec.modelType = "llama";
        spec.warnings.push_back("no model_type: read as a Llama-style decoder");
    }
    if (!kKnownTypes.count(spec.modelType))
        spec.warnings.push_back("model_type '" + spec.modelType
            + "' is not one Tunebench knows; read as a Llama-style decoder "
              "(RMSNorm, gated MLP): check the parameter count");
    if (const auto it = object.find("_name_or_path"); it != object.end() && it->is_string())
        spec.hfRepoId = it->get<std::string>();

    spec.hiddenSize = reader.integer("hidden_size", true).value_or(0);
    spec.intermediateSize = reader.integer("intermediate_size", true).value_or(0);
    spec.numLayers = reader.integer("num_hidden_layers", true).value_or(0);
    spec.numHeads = reader.integer("num_attention_heads", true).value_or(0);
    spec.numKvHeads = reader.integer("num_key_value_heads", false).value_or(spec.numHeads);
    spec.vocabSize = reader.integer("vocab_size", true).value_or(0);
    spec.maxPositionEmbeddings = reader.integer("max_position_embeddings", false).value_or(0);
    if (const auto headDim = reader.integer("head_dim", false)) {
        spec.headDim = *headDim;
    } else if (spec.numHeads > 0) {
        if (spec.hiddenSize % spec.numHeads != 0)
            reader.problem("num_attention_heads",
                std::to_string(spec.numHeads) + " does not divide hidden_size "
                    + std::to_string(spec.hiddenSize) + " and there is no head_dim");
        spec.headDim = spec.hiddenSize / spec.numHeads;
    }

    const std::string& type = spec.modelType;
    const bool gemma = type.rfind("gemma", 0) == 0;
    // Each model class sets its own default for tie_word_embeddings.
    spec.tieWordEmbeddings = reader.boolean("tie_word_embeddings").value_or(gemma);
    const bool attentionBias = reader.boolean("attention_bias").value_or(false);
    spec.mlpBias = reader.boolean("mlp_bias").value_or(false);
    if (type == "qwen2") {
        spec.qkvBias = true; // Qwen2Attention: q, k, v always carry a bias, o_proj never
    } else if (type != "phi3") {
        spec.qkvBias = attentionBias;
        spec.outputBias = attentionBias;
    }
    spec.qkNorm = type == "qwen3" || type == "gemma3_text";
    spec.normsPerLayer = (type == "gemma2" || type == "gemma3_text") ? 4 : 2;
    spec.fusedQkv = type == "phi3";

    if (!reader.problems.empty()) {
        std::string message;
        for (size_t i = 0; i < reader.problems.size(); ++i)
            message += (i ? "\n" : "") + reader.problems[i];
        return common::Error{message, {}};
    }
    if (const common::Status valid = validateModelSpec(spec, origin); !valid)
        return valid.error();
    return spec;
}

} // namespace

common::Result<ModelSpec> parseHfConfig(std::string_view text, const std::string& origin)
{
    json object;
    try {
        object = json::parse(text.begin(), text.end());
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
        return specFromObject(object, origin, name, 0);
    } catch (const std::exception& e) {
        // nlohmann throws on type mismatches we did not foresee.
        return common::Error::at(origin, {}, std::string("unexpected content: ") + e.what());
    }
}

common::Result<ModelSpec> readHfConfig(const std::string& path)
{
    std::error_code ec;
    std::string file = path;
    if (std::filesystem::is_directory(path, ec))
        file = (std::filesystem::path(path) / "config.json").string();
    const common::Result<std::string> text = common::readFile(file);
    if (!text)
        return text.error();
    return parseHfConfig(*text, file);
}

} // namespace tb::model
