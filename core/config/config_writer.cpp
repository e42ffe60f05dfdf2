#include "config/config_writer.h"

#include "common/atomic_file.h"

#include <yaml-cpp/yaml.h>

#include <array>
#include <charconv>

namespace tb::config {

namespace {

using Tree = nlohmann::ordered_json;

// Shortest text that reads back to the same double, so a saved config
// reloads to an equal config (the resume check compares them).
std::string numberText(double value)
{
    std::array<char, 64> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    return std::string(buffer.data(), result.ptr);
}

// One tree in the schema's key order, written as YAML or JSON.
Tree orderedTree(const RunConfig& config)
{
    const LoraConfig& lora = config.lora;
    const DataConfig& data = config.data;
    const TrainingConfig& training = config.training;
    const OutputConfig& output = config.output;
    const DistributedConfig& distributed = config.distributed;
    Tree tree = Tree::object();
    tree["name"] = config.name;
    tree["model"] = config.model;
    tree["tokenizer"] = config.tokenizer;
    tree["method"] = toString(config.method);
    tree["objective"] = toString(config.objective);
    tree["lora"] = Tree{{"rank", lora.rank}, {"alpha", lora.alpha}, {"dropout", lora.dropout},
        {"target_modules", lora.targetModules}, {"target_parameters", lora.targetParameters}};
    tree["dpo"] = Tree{{"beta", config.dpo.beta}, {"loss_type", toString(config.dpo.lossType)},
        {"label_smoothing", config.dpo.labelSmoothing}};
    tree["data"] = Tree{
        {"train", data.trainFiles},
        {"format", toString(data.format)},
        {"columns",
            Tree{{"prompt", data.columns.prompt}, {"input", data.columns.input},
                {"response", data.columns.response}, {"system", data.columns.system},
                {"messages", data.columns.messages}}},
        {"instruction", data.instruction},
        {"template", toString(data.promptTemplate)},
        {"sequence_length", data.sequenceLength},
        {"packing", data.packing},
        {"validation_split", data.validationSplit},
        {"validation_file", data.validationFiles},
        {"malformed", toString(data.malformed)},
        {"text_separator", data.textSeparator},
    };
    tree["training"] = Tree{
        {"epochs", training.epochs},
        {"max_steps", training.maxSteps},
        {"micro_batch", training.microBatch},
        {"grad_accum", training.gradAccum},
        {"learning_rate", training.learningRate},
        {"schedule", toString(training.schedule)},
        {"warmup_steps", training.warmupSteps},
        {"warmup_ratio", training.warmupRatio},
        {"weight_decay", training.weightDecay},
        {"adam_beta1", training.adamBeta1},
        {"adam_beta2", training.adamBeta2},
        {"adam_epsilon", training.adamEpsilon},
        {"max_grad_norm", training.maxGradNorm},
        {"seed", training.seed},
        {"eval_every", training.evalEvery},
        {"log_every", training.logEvery},
    };
    tree["precision"] = toString(config.precision);
    tree["activation_checkpointing"] = config.activationCheckpointing;
    tree["device"] = toString(config.device);
    tree["output"] = Tree{{"dir", output.dir}, {"checkpoint_every", output.checkpointEvery},
        {"keep_last", output.keepLast}, {"export", toString(output.exportKind)}};
    tree["distributed"] = Tree{{"sharding", toString(distributed.sharding)},
        {"offload", toString(distributed.offload)},
        {"timeout_seconds", distributed.timeoutSeconds}};
    return tree;
}

bool needsQuotes(const std::string& text)
{
    for (const char c : text) {
        if (static_cast<unsigned char>(c) < 0x20)
            return true;
    }
    return false;
}

void emit(YAML::Emitter& out, const Tree& value)
{
    switch (value.type()) {
    case Tree::value_t::object:
        out << YAML::BeginMap;
        for (const auto& [key, child] : value.items()) {
            out << YAML::Key << key << YAML::Value;
            emit(out, child);
        }
        out << YAML::EndMap;
        break;
    case Tree::value_t::array:
        out << YAML::Flow << YAML::BeginSeq;
        for (const Tree& child : value)
            emit(out, child);
        out << YAML::EndSeq;
        break;
    case Tree::value_t::string: {
        const std::string& text = value.get_ref<const std::string&>();
        if (needsQuotes(text))
            out << YAML::DoubleQuoted;
        out << text;
        break;
    }
    case Tree::value_t::boolean:
        out << (value.get<bool>() ? "true" : "false");
        break;
    case Tree::value_t::number_float:
        out << numberText(value.get<double>());
        break;
    case Tree::value_t::number_integer:
        out << std::to_string(value.get<long long>());
        break;
    case Tree::value_t::number_unsigned:
        out << std::to_string(value.get<unsigned long long>());
        break;
    default:
        out << YAML::Null;
        break;
    }
}

} // namespace

std::string toYaml(const RunConfig& config)
{
    YAML::Emitter out;
    emit(out, orderedTree(config));
    return std::string("# Tunebench run config, every key resolved (docs/RUN_CONFIG.md)\n")
        + out.c_str() + "\n";
}

nlohmann::json toJson(const RunConfig& config)
{
    // A path or name with invalid UTF-8 (YAML accepts the bytes) would make
    // the JSON dump throw; it is written with U+FFFD instead.
    return nlohmann::json::parse(
        orderedTree(config).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

common::Status saveRunConfig(const std::string& path, const RunConfig& config)
{
    return common::writeFileAtomic(path, toYaml(config));
}

} // namespace tb::config
