#include "model/model_preset.h"

#include "yaml/map_reader.h"

#include <sstream>

namespace tb::model {

namespace {

constexpr long long kMaxCount = 1LL << 40;

std::optional<NormKind> parseNorm(std::string_view text)
{
    if (text == "rmsnorm")
        return NormKind::RmsNorm;
    if (text == "layernorm")
        return NormKind::LayerNorm;
    return std::nullopt;
}

std::optional<MlpKind> parseMlp(std::string_view text)
{
    if (text == "gated")
        return MlpKind::Gated;
    if (text == "plain")
        return MlpKind::Plain;
    return std::nullopt;
}

void readSpec(yaml::MapReader& fields, ModelSpec& spec)
{
    fields.require({"name", "model_type", "hidden_size", "intermediate_size", "num_layers",
        "num_heads", "vocab_size", "tie_word_embeddings", "published_params",
        "published_params_source", "source"});
    fields.string("name", spec.name);
    fields.string("hf_repo_id", spec.hfRepoId);
    fields.stringList("aliases", spec.aliases);
    fields.string("model_type", spec.modelType);
    fields.integer("hidden_size", spec.hiddenSize, 1, kMaxCount);
    fields.integer("intermediate_size", spec.intermediateSize, 1, kMaxCount);
    fields.integer("num_layers", spec.numLayers, 1, kMaxCount);
    fields.integer("num_heads", spec.numHeads, 1, kMaxCount);
    spec.numKvHeads = spec.numHeads;
    fields.integer("num_kv_heads", spec.numKvHeads, 1, kMaxCount);
    spec.headDim = spec.numHeads > 0 ? spec.hiddenSize / spec.numHeads : 0;
    fields.integer("head_dim", spec.headDim, 1, kMaxCount);
    fields.integer("vocab_size", spec.vocabSize, 1, kMaxCount);
    fields.integer("max_position_embeddings", spec.maxPositionEmbeddings, 1, kMaxCount);
    fields.boolean("tie_word_embeddings", spec.tieWordEmbeddings);
    fields.boolean("qkv_bias", spec.qkvBias);
    fields.boolean("output_bias", spec.outputBias);
    fields.boolean("mlp_bias", spec.mlpBias);
    fields.boolean("lm_head_bias", spec.lmHeadBias);
    fields.boolean("qk_norm", spec.qkNorm);
    fields.boolean("fused_qkv", spec.fusedQkv);
    fields.integer("norms_per_layer", spec.normsPerLayer, 1, 8);
    fields.number("attn_logit_softcapping", spec.attnLogitSoftcap, 0, 1e6);
    fields.choice("norm", spec.norm, parseNorm, {"rmsnorm", "layernorm"});
    fields.choice("mlp", spec.mlp, parseMlp, {"gated", "plain"});
    fields.integer("experts", spec.experts, 1, 4096);
    fields.integer("experts_per_token", spec.expertsPerToken, 1, 4096);
    fields.integer("expert_intermediate_size", spec.expertIntermediateSize, 1, kMaxCount);
    std::int64_t published = 0;
    if (fields.integer("published_params", published, 1, kMaxCount))
        spec.publishedParams = published;
    fields.string("published_params_source", spec.publishedParamsSource);
    fields.string("source", spec.source);
}

} // namespace

common::Result<ModelSpec> parseModelPreset(std::string_view text, const std::string& origin)
{
    yaml::ProblemList problems;
    const YAML::Node root = yaml::load(std::string(text), problems);
    if (!problems.isEmpty())
        return problems.toError(origin);
    ModelSpec spec;
    yaml::MapReader fields(root, {}, problems);
    readSpec(fields, spec);
    fields.checkKeys();
    if (!problems.isEmpty())
        return problems.toError(origin);
    if (const common::Status valid = validateModelSpec(spec, origin); !valid)
        return valid.error();
    spec.source = spec.source.empty() ? origin : spec.source;
    return spec;
}

common::Result<ModelSpec> loadModelPreset(const std::string& path)
{
    const common::Result<std::string> text = yaml::readYamlFile(path);
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
    if (spec.attnLogitSoftcap > 0)
        out << YAML::Key << "attn_logit_softcapping" << YAML::Value << spec.attnLogitSoftcap;
    out << YAML::Key << "norm" << YAML::Value
        << (spec.norm == NormKind::RmsNorm ? "rmsnorm" : "layernorm");
    out << YAML::Key << "mlp" << YAML::Value << (spec.mlp == MlpKind::Gated ? "gated" : "plain");
    if (spec.isMixtureOfExperts()) {
        out << YAML::Key << "experts" << YAML::Value << spec.experts;
        out << YAML::Key << "experts_per_token" << YAML::Value << spec.expertsPerToken;
        out << YAML::Key << "expert_intermediate_size" << YAML::Value
            << spec.expertIntermediateSize;
    }
    if (spec.publishedParams)
        out << YAML::Key << "published_params" << YAML::Value << *spec.publishedParams;
    out << YAML::Key << "published_params_source" << YAML::Value << spec.publishedParamsSource;
    out << YAML::Key << "source" << YAML::Value << spec.source;
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

} // namespace tb::model
