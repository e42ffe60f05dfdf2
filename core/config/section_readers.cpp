#include "config/section_readers.h"

#include "common/text.h"
#include "common/training_limits.h"
#include "common/training_rules.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>

namespace tb::config::detail {

namespace {

constexpr long long kNoLimit = std::numeric_limits<long long>::max();
constexpr int kIntLimit = std::numeric_limits<int>::max();
// A day: longer than any rendezvous or collective should wait, and far from
// overflowing a conversion to std::chrono milliseconds.
constexpr double kMaxTimeoutSeconds = 86400.0;

void checkOffload(MapReader& distributed, const DistributedConfig& config)
{
    if (const auto refused = common::checkOffload(config.sharding, config.offload))
        distributed.report(refused->field, refused->problem, refused->hint);
}

// `withParameters`: target_parameters adapts something, so the list may be
// empty (peft's target_modules=[] beside target_parameters).
void checkTargetModules(MapReader& lora, std::vector<std::string>& modules, bool withParameters)
{
    const YAML::Node node = lora.value("target_modules");
    if (node.IsScalar() && node.Scalar() == "all-linear") {
        modules = llamaLinearModules();
        return;
    }
    std::vector<std::string> read;
    if (!lora.stringList("target_modules", read, withParameters,
            "a list of module names (e.g. [q_proj, v_proj]) or all-linear"))
        return;
    const std::vector<std::string>& known = knownLinearModules();
    std::set<std::string> seen;
    bool ok = true;
    for (const std::string& name : read) {
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            const auto nearest = common::nearestNames(known, name, 1);
            lora.report("target_modules",
                "got \"" + name
                    + "\", expected module names among q_proj, k_proj, v_proj, o_proj, "
                      "gate_proj, up_proj, down_proj (Phi-3: qkv_proj, gate_up_proj)",
                nearest.empty() ? std::string() : "did you mean " + nearest.front() + "?");
            ok = false;
        } else if (!seen.insert(name).second) {
            lora.report("target_modules", "\"" + name + "\" is listed twice");
            ok = false;
        }
    }
    if (ok)
        modules = std::move(read);
}

// Names peft's target_parameters would take; whether the model has them is
// checked when it is loaded (attachExpertLora). peft refuses dropout there.
void checkTargetParameters(MapReader& lora, LoraConfig& out)
{
    std::vector<std::string> read;
    if (!lora.stringList("target_parameters", read, true,
            "a list of expert weight names (e.g. [mlp.experts.gate_up_proj, "
            "mlp.experts.down_proj])"))
        return;
    std::set<std::string> seen;
    for (const std::string& name : read) {
        if (!seen.insert(name).second) {
            lora.report("target_parameters", "\"" + name + "\" is listed twice");
            return;
        }
    }
    out.targetParameters = std::move(read);
    if (!out.targetParameters.empty() && out.dropout > 0)
        lora.report("dropout",
            "got " + common::shortestNumber(out.dropout) + ", expected 0 with target_parameters",
            "peft 0.21 cannot drop out the inputs of LoRA on expert weights and refuses such "
            "an adapter; set lora.dropout: 0");
}

} // namespace

void ReadState::problem(const std::string& path, std::string message, std::string hint)
{
    const auto it = nodes.find(path);
    problems.add(problemAt(it != nodes.end() ? it->second : YAML::Node(), YAML::Node(), path,
        std::move(message), std::move(hint)));
}

void ReadState::warning(const std::string& path, std::string message)
{
    const auto it = nodes.find(path);
    warnings.add(problemAt(
        it != nodes.end() ? it->second : YAML::Node(), YAML::Node(), path, std::move(message)));
}

void readLoraSection(MapReader& top, RunConfig& config, ReadState& state)
{
    const auto node = top.section("lora");
    if (!node)
        return;
    MapReader lora(*node, "lora", state.problems);
    lora.recordNodes(state.nodes);
    LoraConfig& out = config.lora;
    // The planner's ranges (plan/plan_options.cpp reads the same limits).
    lora.integer("rank", out.rank, common::kLoraRankLimit.min, common::kLoraRankLimit.max);
    lora.number("alpha", out.alpha, common::kLoraAlphaLimit.min, common::kLoraAlphaLimit.max);
    lora.number(
        "dropout", out.dropout, common::kLoraDropoutLimit.min, common::kLoraDropoutLimit.max);
    if (lora.has("target_parameters"))
        checkTargetParameters(lora, out);
    if (lora.has("target_modules"))
        checkTargetModules(lora, out.targetModules, !out.targetParameters.empty());
    checkSchemaKeys(lora);
}

void readDpoSection(MapReader& top, RunConfig& config, ReadState& state)
{
    const auto node = top.section("dpo");
    if (!node)
        return;
    MapReader dpo(*node, "dpo", state.problems);
    dpo.recordNodes(state.nodes);
    DpoConfig& out = config.dpo;
    dpo.number("beta", out.beta, common::kDpoBetaLimit.min, false, common::kDpoBetaLimit.max, true,
        "a positive number");
    readChoice(dpo, "loss_type", out.lossType);
    dpo.number("label_smoothing", out.labelSmoothing, common::kDpoLabelSmoothingLimit.min, true,
        common::kDpoLabelSmoothingLimit.max, false, "a number in [0, 0.5)");
    checkSchemaKeys(dpo);
}

void readDataSection(MapReader& top, RunConfig& config, ReadState& state)
{
    const auto node = top.section("data");
    if (!node)
        return;
    MapReader data(*node, "data", state.problems);
    data.recordNodes(state.nodes);
    DataConfig& out = config.data;
    data.stringList("train", out.trainFiles, false, "a path or a list of paths");
    readChoice(data, "format", out.format);
    if (const auto columnsNode = data.section("columns")) {
        MapReader columns(*columnsNode, "data.columns", state.problems);
        columns.recordNodes(state.nodes);
        const char* expected = "a field or column name";
        columns.string("prompt", out.columns.prompt, false, expected);
        columns.string("input", out.columns.input, false, expected);
        columns.string("response", out.columns.response, false, expected);
        columns.string("system", out.columns.system, false, expected);
        columns.string("messages", out.columns.messages, false, expected);
        checkSchemaKeys(columns);
    }
    data.string("instruction", out.instruction, true, "a text");
    readChoice(data, "template", out.promptTemplate);
    data.integer("sequence_length", out.sequenceLength, common::kSequenceLengthLimit.min,
        common::kSequenceLengthLimit.max);
    data.boolean("packing", out.packing);
    data.number(
        "validation_split", out.validationSplit, 0.0, true, 1.0, false, "a number in [0, 1)");
    data.stringList("validation_file", out.validationFiles, true, "a path or a list of paths");
    readChoice(data, "malformed", out.malformed);
    data.string("text_separator", out.textSeparator, false, "a non-empty text");
    checkSchemaKeys(data);
}

void readTrainingSection(MapReader& top, RunConfig& config, ReadState& state)
{
    const auto node = top.section("training");
    if (!node)
        return;
    MapReader training(*node, "training", state.problems);
    training.recordNodes(state.nodes);
    TrainingConfig& out = config.training;
    training.integer("epochs", out.epochs, 1, kIntLimit);
    training.integer("max_steps", out.maxSteps, 0, kNoLimit);
    training.integer(
        "micro_batch", out.microBatch, common::kMicroBatchLimit.min, common::kMicroBatchLimit.max);
    training.integer(
        "grad_accum", out.gradAccum, common::kGradAccumLimit.min, common::kGradAccumLimit.max);
    training.number("learning_rate", out.learningRate, 0.0, false, 1e6, true, "a positive number");
    readChoice(training, "schedule", out.schedule);
    training.integer("warmup_steps", out.warmupSteps, 0, kNoLimit);
    training.number("warmup_ratio", out.warmupRatio, 0.0, true, 1.0, false, "a number in [0, 1)");
    training.number("weight_decay", out.weightDecay, 0.0, true, 1e6, true, "a number >= 0");
    training.number("adam_beta1", out.adamBeta1, 0.0, true, 1.0, false, "a number in [0, 1)");
    training.number("adam_beta2", out.adamBeta2, 0.0, true, 1.0, false, "a number in [0, 1)");
    training.number(
        "adam_epsilon", out.adamEpsilon, 0.0, false, 1.0, true, "a positive number up to 1");
    training.number("max_grad_norm", out.maxGradNorm, 0.0, true, 1e12, true, "a number >= 0");
    training.unsignedInteger("seed", out.seed);
    training.integer("eval_every", out.evalEvery, 0, kNoLimit);
    training.integer("log_every", out.logEvery, 1, kNoLimit);
    checkSchemaKeys(training);
}

void readOutputSection(MapReader& top, RunConfig& config, ReadState& state)
{
    const auto node = top.section("output");
    if (!node)
        return;
    MapReader output(*node, "output", state.problems);
    output.recordNodes(state.nodes);
    OutputConfig& out = config.output;
    output.string("dir", out.dir, false, "a folder path");
    output.integer("checkpoint_every", out.checkpointEvery, 0, kNoLimit);
    output.integer("keep_last", out.keepLast, 1, kIntLimit);
    readChoice(output, "export", out.exportKind);
    checkSchemaKeys(output);
}

void readDistributedSection(MapReader& top, RunConfig& config, ReadState& state)
{
    const auto node = top.section("distributed");
    if (!node)
        return;
    MapReader distributed(*node, "distributed", state.problems);
    distributed.recordNodes(state.nodes);
    DistributedConfig& out = config.distributed;
    // A sharding that was not read says nothing about the offload.
    const bool shardingRead =
        !distributed.has("sharding") || readChoice(distributed, "sharding", out.sharding);
    const bool offloadRead = readChoice(distributed, "offload", out.offload);
    if (shardingRead && offloadRead)
        checkOffload(distributed, out);
    distributed.number("timeout_seconds", out.timeoutSeconds, 0.0, false, kMaxTimeoutSeconds, true,
        "a positive number of seconds, at most 86400");
    checkSchemaKeys(distributed);
}

namespace {

// DPO trains on preference pairs, one pair's two rows padded side by side,
// against a reference the run can compute (docs/TRAINING.md, "DPO").
void checkPreferenceTuning(const RunConfig& config, ReadState& state)
{
    const bool dpo = config.isPreferenceTuning();
    const DataConfig& data = config.data;
    if (!dpo) {
        if (data.format == DataFormat::Preference)
            state.problem(state.has("data.format") ? "data.format" : "objective",
                "preference pairs train with objective dpo; this run's objective is "
                    + std::string(toString(config.objective)),
                "set objective: dpo");
        if (state.has("dpo"))
            state.warning("dpo", "ignored: objective is sft");
        return;
    }
    if (data.format != DataFormat::Preference)
        state.problem(state.has("data.format") ? "data.format" : "objective",
            "objective dpo trains on preference pairs; data.format is "
                + std::string(toString(data.format)),
            "set data.format: preference (JSON Lines of prompt, chosen, rejected)");
    if (config.method == Method::Full)
        state.problem(state.has("method") ? "method" : "objective",
            "objective dpo needs a reference model: with lora and qlora it is the base model with "
            "the adapter disabled; a full fine-tune has no frozen copy here",
            "set method: lora or qlora");
    if (data.packing)
        state.problem("data.packing",
            "a preference pair's chosen and rejected rows are compared whole; they cannot be "
            "packed",
            "remove data.packing");
    if (config.dpo.lossType == DpoLossType::Ipo && config.dpo.labelSmoothing > 0.0)
        state.problem("dpo.label_smoothing",
            "got " + std::to_string(config.dpo.labelSmoothing)
                + ", but the ipo loss has no label smoothing",
            "use loss_type sigmoid or robust, or remove label_smoothing");
    if (state.has("data.columns"))
        state.warning("data.columns",
            "ignored: preference pairs are read from prompt, chosen "
            "and rejected");
    if (data.promptTemplate != PromptTemplate::Auto && data.promptTemplate != PromptTemplate::None
        && data.promptTemplate != PromptTemplate::Model)
        state.problem("data.template",
            "got " + std::string(toString(data.promptTemplate))
                + ", but plain preference pairs are tokenized as written and conversational ones "
                  "through the model's own template; expected auto, model or none");
}

} // namespace

void checkCombinations(const RunConfig& config, ReadState& state)
{
    checkPreferenceTuning(config, state);
    if (config.method == Method::Full && state.has("lora"))
        state.warning("lora", "ignored: method is full");
    if (config.method == Method::Full && config.output.exportKind != ExportKind::Merged
        && state.has("output.export"))
        state.problem("output.export",
            "got " + std::string(toString(config.output.exportKind))
                + ", but method full has no adapter; expected merged");

    const DataConfig& data = config.data;
    const PromptTemplate tmpl = data.promptTemplate;
    if (data.format == DataFormat::Text) {
        if (tmpl != PromptTemplate::Auto && tmpl != PromptTemplate::None)
            state.problem("data.template",
                "got " + std::string(toString(tmpl))
                    + ", but plain text has no prompts; expected auto "
                      "or none");
        if (state.has("data.columns"))
            state.warning("data.columns", "ignored: format text has no columns");
        if (state.has("data.instruction"))
            state.warning("data.instruction", "ignored: format text has no instructions");
    } else if (data.format == DataFormat::Chat) {
        if (tmpl == PromptTemplate::Alpaca)
            state.problem("data.template",
                "got alpaca, but chat data needs a chat template; expected auto, "
                "model, llama3, chatml, mistral or none");
        if (state.has("data.instruction"))
            state.warning("data.instruction", "ignored: chat records carry their own messages");
    }
    if (data.validationSplit > 0.0 && !data.validationFiles.empty())
        state.problem("data.validation_split",
            "given together with data.validation_file; expected one of the two");

    const TrainingConfig& training = config.training;
    if (training.warmupSteps > 0 && training.warmupRatio > 0.0)
        state.problem("training.warmup_ratio",
            "given together with training.warmup_steps; expected one of the two");
    if (training.evalEvery > 0 && !config.hasValidationData())
        state.problem("training.eval_every",
            "got " + std::to_string(training.evalEvery) + ", but there is no validation data",
            "set data.validation_split or data.validation_file");
}

} // namespace tb::config::detail
