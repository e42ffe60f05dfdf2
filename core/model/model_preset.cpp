#include "model/model_preset.h"

#include "common/atomic_file.h"
#include "model/yaml_fields.h"

#include <sstream>

namespace tb::model {

namespace {

constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;

void readSpec(YamlFields& fields, ModelSpec& spec)
{
    spec.name = fields.text("name", true).value_or("");
    spec.hfRepoId = fields.text("hf_repo_id", false).value_or("");
    spec.aliases = fields.textList("aliases", false);
    spec.modelType = fields.text("model_type", true).value_or("llama");
    spec.hiddenSize = fields.integer("hidden_size", true, 1, kMaxCount).value_or(0);
    spec.intermediateSize = fields.integer("intermediate_size", true, 1, kMaxCount).value_or(0);
    spec.numLayers = fields.integer("num_layers", true, 1, kMaxCount).value_or(0);
    spec.numHeads = fields.integer("num_heads", true, 1, kMaxCount).value_or(0);
    spec.numKvHeads = fields.integer("num_kv_heads", false, 1, kMaxCount).value_or(spec.numHeads);
    const auto headDim = fields.integer("head_dim", false, 1, kMaxCount);
    spec.headDim = headDim ? *headDim : (spec.numHeads > 0 ? spec.hiddenSize / spec.numHeads : 0);
    spec.vocabSize = fields.integer("vocab_size", true, 1, kMaxCount).value_or(0);
    spec.maxPositionEmbeddings =
        fields.integer("max_position_embeddings", false, 1, kMaxCount).value_or(0);
    spec.tieWordEmbeddings = fields.boolean("tie_word_embeddings", true).value_or(false);
    spec.qkvBias = fields.boolean("qkv_bias", false).value_or(false);
    spec.outputBias = fields.boolean("output_bias", false).value_or(false);
    spec.mlpBias = fields.boolean("mlp_bias", false).value_or(false);
    spec.lmHeadBias = fields.boolean("lm_head_bias", false).value_or(false);
    spec.qkNorm = fields.boolean("qk_norm", false).value_or(false);
    spec.fusedQkv = fields.boolean("fused_qkv", false).value_or(false);
    spec.normsPerLayer =
        static_cast<int>(fields.integer("norms_per_layer", false, 1, 8).value_or(2));
    if (const auto norm = fields.text("norm", false)) {
        if (*norm == "rmsnorm")
            spec.norm = NormKind::RmsNorm;
        else if (*norm == "layernorm")
            spec.norm = NormKind::LayerNorm;
        else
            fields.problem(fields.child("norm", false), "norm",
                "got '" + *norm + "', expected rmsnorm or layernorm");
    }
    if (const auto mlp = fields.text("mlp", false)) {
        if (*mlp == "gated")
            spec.mlp = MlpKind::Gated;
        else if (*mlp == "plain")
            spec.mlp = MlpKind::Plain;
        else
            fields.problem(
                fields.child("mlp", false), "mlp", "got '" + *mlp + "', expected gated or plain");
    }
    spec.publishedParams = fields.integer("published_params", true, 1, kMaxCount);
    spec.publishedParamsSource = fields.text("published_params_source", true).value_or("");
    spec.source = fields.text("source", true).value_or("");
}

} // namespace

common::Result<ModelSpec> parseModelPreset(std::string_view yaml, const std::string& origin)
{
    std::vector<std::string> problems;
    const YAML::Node root = loadYaml(std::string(yaml), origin, &problems);
    if (!problems.empty())
        return common::Error{joinProblems(problems), {}};
    ModelSpec spec;
    YamlFields fields(root, origin, {}, &problems);
    readSpec(fields, spec);
    fields.finish();
    if (!problems.empty())
        return common::Error{joinProblems(problems), {}};
    if (const common::Status valid = validateModelSpec(spec, origin); !valid)
        return valid.error();
    spec.source = spec.source.empty() ? origin : spec.source;
    return spec;
}

common::Result<ModelSpec> loadModelPreset(const std::string& path)
{
    const common::Result<std::string> text = common::readFile(path);
    if (!text)
        return text.error();
    return parseModelPreset(*text, path);
}

std::string modelPresetYaml(const ModelSpec& spec)
{
    YAML::Emitter out;
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << spec.name;
    if (!spec.hfRepoId.empty())
        out << YAML::Key << "hf_repo_id" << YAML::Value << spec.hfRepoId;
    if (!spec.aliases.empty())
        out << YAML::Key << "aliases" << YAML::Value << YAML::Flow << spec.aliases;
    out << YAML::Key << "model_type" << YAML::Value << spec.modelType;
    out << YAML::Key << "hidden_size" << YAML::Value << spec.hiddenSize;
    out << YAML::Key << "intermediate_size" << YAML::Value << spec.intermediateSize;
    out << YAML::Key << "num_layers" << YAML::Value << spec.numLayers;
    out << YAML::Key << "num_heads" << YAML::Value << spec.numHeads;
    out << YAML::Key << "num_kv_heads" << YAML::Value << spec.numKvHeads;
    out << YAML::Key << "head_dim" << YAML::Value << spec.headDim;
    out << YAML::Key << "vocab_size" << YAML::Value << spec.vocabSize;
    if (spec.maxPositionEmbeddings > 0)
        out << YAML::Key << "max_position_embeddings" << YAML::Value << spec.maxPositionEmbeddings;
    out << YAML::Key << "tie_word_embeddings" << YAML::Value << spec.tieWordEmbeddings;
    out << YAML::Key << "qkv_bias" << YAML::Value << spec.qkvBias;
    out << YAML::Key << "output_bias" << YAML::Value << spec.outputBias;
    out << YAML::Key << "mlp_bias" << YAML::Value << spec.mlpBias;
    out << YAML::Key << "lm_head_bias" << YAML::Value << spec.lmHeadBias;
    out << YAML::Key << "qk_norm" << YAML::Value << spec.qkNorm;
    out << YAML::Key << "fused_qkv" << YAML::Value << spec.fusedQkv;
    out << YAML::Key << "norms_per_layer" << YAML::Value << spec.normsPerLayer;
    out << YAML::Key << "norm" << YAML::Value
        << (spec.norm == NormKind::RmsNorm ? "rmsnorm" : "layernorm");
    out << YAML::Key << "mlp" << YAML::Value << (spec.mlp == MlpKind::Gated ? "gated" : "plain");
    if (spec.publishedParams)
        out << YAML::Key << "published_params" << YAML::Value << *spec.publishedParams;
    out << YAML::Key << "published_params_source" << YAML::Value << spec.publishedParamsSource;
    out << YAML::Key << "source" << YAML::Value << spec.source;
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

} // namespace tb::model
