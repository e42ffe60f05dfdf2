#include "model/hf_config_reader.h"

namespace tb::model::detail {

namespace {

using Experts = HfArchitecture::Experts;

// Other families' names for an expert count: a file that gives one is a
// mixture of experts whatever its model_type says.
constexpr const char* kExpertCountFields[] = {
    "num_local_experts", "num_experts", "n_routed_experts"};

// The first of `fields` the file gives, as a positive integer.
std::optional<std::int64_t> firstInteger(Reader& reader, std::initializer_list<const char*> fields)
{
    for (const char* field : fields)
        if (reader.has(field))
            return reader.integer(field, false);
    return std::nullopt;
}

void refuseUnknownExperts(Reader& reader, const HfConfig& config)
{
    for (const char* field : kExpertCountFields) {
        const json* value = reader.find(field);
        if (value && !(value->is_number() && value->get<double>() <= 1))
            reader.problem(field,
                "got " + typeName(*value) + ": mixture-of-experts model_type '" + config.modelType
                    + "' is not supported (supported: mixtral, qwen3_moe, gpt_oss; or a dense "
                      "decoder)");
    }
}

// Qwen3-MoE can keep a dense MLP in some layers; no published checkpoint
// does, and the counts assume every layer routes.
void refuseDenseLayers(Reader& reader)
{
    if (const auto step = reader.integer("decoder_sparse_step", false); step && *step != 1)
        reader.problem("decoder_sparse_step",
            "got " + std::to_string(*step) + ", only 1 (experts in every layer) is supported");
    if (const json* dense = reader.find("mlp_only_layers");
        dense && !(dense->is_array() && dense->empty()))
        reader.problem("mlp_only_layers",
            "got " + dense->dump() + ", only [] (experts in every layer) is supported");
}

// gpt-oss: every expert of intermediate_size with biases on gate_up_proj
// and down_proj, a router with a bias, a softmax over each token's top-k
// router logits (the top-k of a full softmax renormalised). OpenAI's files
// give the top-k twice, as num_experts_per_tok and experts_per_token, and
// publish the experts in MXFP4 (quantization_config.quant_method).
void readGptOssExperts(Reader& reader, HfConfig& config)
{
    config.experts = firstInteger(reader, {"num_local_experts", "num_experts"}).value_or(128);
    const auto perToken = reader.integer("num_experts_per_tok", false);
    const auto openAiPerToken = reader.integer("experts_per_token", false);
    if (perToken && openAiPerToken && *perToken != *openAiPerToken)
        reader.problem("experts_per_token",
            "got " + std::to_string(*openAiPerToken) + ", expected num_experts_per_tok's "
                + std::to_string(*perToken) + " (both name the experts a token runs)");
    config.expertsPerToken = perToken.value_or(openAiPerToken.value_or(4));
    config.expertIntermediateSize = config.intermediateSize;
    config.mlpBias = true;
    config.normTopkProb = true;
    if (const json* quantization = reader.find("quantization_config")) {
        const auto method =
            quantization->is_object() ? quantization->find("quant_method") : quantization->end();
        if (method == quantization->end() || *method != "mxfp4")
            reader.problem("quantization_config.quant_method",
                "got " + (method == quantization->end() ? std::string("none") : typeName(*method))
                    + ", expected \"mxfp4\" (the format gpt-oss publishes its experts in) or no "
                      "quantization_config");
    }
}

void readRouterLoss(Reader& reader, HfConfig& config)
{
    if (const json* coef = reader.find("router_aux_loss_coef")) {
        if (coef->is_number() && coef->get<double>() >= 0)
            config.routerAuxLossCoef = coef->get<double>();
        else
            reader.problem("router_aux_loss_coef",
                "got " + typeName(*coef) + ", expected a number at least 0");
    }
    config.outputRouterLogits = reader.boolean("output_router_logits").value_or(false);
}

} // namespace

void readExperts(Reader& reader, HfConfig& config, const HfArchitecture& arch)
{
    if (arch.experts == Experts::None) {
        refuseUnknownExperts(reader, config);
        return;
    }
    if (arch.experts == Experts::GptOss) {
        readGptOssExperts(reader, config);
        readRouterLoss(reader, config);
        return;
    }
    const bool mixtral = arch.experts == Experts::Mixtral;
    config.experts = (mixtral ? firstInteger(reader, {"num_local_experts"})
                              : firstInteger(reader, {"num_experts", "num_local_experts"}))
                         .value_or(mixtral ? 8 : 128);
    config.expertsPerToken = reader.integer("num_experts_per_tok", false).value_or(mixtral ? 2 : 8);
    config.expertIntermediateSize = mixtral
        ? config.intermediateSize
        : reader.integer("moe_intermediate_size", false).value_or(768);
    // Mixtral always renormalises the top-k weights; Qwen3-MoE when told.
    config.normTopkProb = mixtral || reader.boolean("norm_topk_prob").value_or(false);
    readRouterLoss(reader, config);
    if (const json* jitter = reader.find("router_jitter_noise"); jitter && jitter->is_number())
        config.routerJitterNoise = jitter->get<double>();
    if (!mixtral)
        refuseDenseLayers(reader);
}

} // namespace tb::model::detail
