#include "model/hf_config_reader.h"

#include <cmath>

namespace tb::model::detail {

namespace {

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
void readRopeObject(
    Reader& rope, Reader& top, HfConfig& config, double& theta, RopeScaling& scaling)
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
    const auto read = [&](const json* object, const char* type, double& theta,
                          RopeScaling& scaling) {
        if (!object)
            return;
        if (!object->is_object()) {
            parameters.problem(type, "got " + typeName(*object) + ", expected an object");
            return;
        }
        Reader rope{
            *object, parameters.origin, parameters.problems, parameters.prefix + type + "."};
        readRopeObject(rope, top, config, theta, scaling);
    };
    read(full, "full_attention", config.ropeTheta, config.ropeScaling);
    if (config.slidingRopeTheta)
        read(sliding, "sliding_attention", *config.slidingRopeTheta, config.slidingRopeScaling);
    return true;
}

} // namespace

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
        if (const json* partial = rope.find("partial_rotary_factor");
            partial && partial->is_number())
            config.partialRotaryFactor = partial->get<double>();
        return;
    }
}

} // namespace tb::model::detail
