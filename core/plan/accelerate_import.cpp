#include "plan/plan_file.h"

#include "common/text.h"
#include "yaml/map_reader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

// accelerate's config YAML (accelerate config / default_config.yaml). Its
// files carry many keys a plan has no use for (IPs, ranks, dynamo), so
// unknown keys are listed as ignored, not errors; known keys are typed by
// the one YAML reader (yaml/map_reader.h).
namespace tb::plan {

namespace {

using yaml::MapReader;

std::string lower(std::string_view text)
{
    return common::toLower(text);
}

std::optional<Sharding> parseFsdpStrategy(std::string_view text)
{
    const std::string s = lower(text);
    if (s == "full_shard" || s == "1")
        return Sharding::FsdpFull;
    if (s == "shard_grad_op" || s == "2")
        return Sharding::FsdpGradOp;
    if (s == "no_shard" || s == "3")
        return Sharding::Ddp;
    if (s == "hybrid_shard" || s == "4" || s == "hybrid_shard_zero2" || s == "5")
        return Sharding::FsdpHybrid;
    return std::nullopt;
}

std::optional<BackwardPrefetch> parseFsdpPrefetch(std::string_view text)
{
    const std::string p = lower(text);
    if (p == "backward_pre")
        return BackwardPrefetch::Pre;
    if (p == "backward_post")
        return BackwardPrefetch::Post;
    if (p == "no_prefetch" || p == "none")
        return BackwardPrefetch::None;
    return std::nullopt;
}

std::optional<Precision> parseMixedPrecision(std::string_view text)
{
    const std::string p = lower(text);
    if (p == "bf16" || p == "fp8") // FP8 is not modelled: planned as bf16 mixed
        return Precision::Bf16Mixed;
    if (p == "fp16")
        return Precision::Fp16Mixed;
    if (p == "no")
        return Precision::Fp32;
    return std::nullopt;
}

// Keys of `map` this import does not use, listed as ignored.
void listIgnored(const YAML::Node& map, const std::string& prefix,
    std::initializer_list<std::string_view> used, ImportResult& result)
{
    for (auto it = map.begin(); it != map.end(); ++it) {
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
        if (std::find(used.begin(), used.end(), key) == used.end())
            result.ignored.push_back(prefix + key);
    }
}

// fsdp_config: the strategy, parameter offload, checkpointing, and
// fsdp_backward_prefetch / fsdp_forward_prefetch: how many units are
// gathered at once (docs/PLANNER.md 4.6).
void readFsdp(MapReader& top, yaml::ProblemList& problems, ImportResult& result)
{
    PlanInput& in = result.input;
    in.sharding = Sharding::FsdpFull;
    // accelerate's default is no offload: an FSDP config without the key
    // offloads nothing, whatever the base plan had.
    in.offload = Offload::None;
    if (const std::optional<YAML::Node> node = top.section("fsdp_config")) {
        MapReader fsdp(*node, "fsdp_config", problems);
        fsdp.choice("fsdp_sharding_strategy", in.sharding, parseFsdpStrategy,
            {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD"});
        const std::string strategy = lower(fsdp.value("fsdp_sharding_strategy").Scalar());
        if (strategy == "hybrid_shard_zero2" || strategy == "5")
            result.applied.push_back("HYBRID_SHARD_ZERO2 planned as HYBRID_SHARD");
        bool offload = false;
        if (fsdp.boolean("fsdp_offload_params", offload) && offload)
            in.offload = Offload::OptimizerAndParams;
        fsdp.boolean("fsdp_activation_checkpointing", in.gradientCheckpointing);
        std::string prefetch;
        if (fsdp.string("fsdp_backward_prefetch", prefetch)) {
            fsdp.choice("fsdp_backward_prefetch", in.fsdp.backwardPrefetch, parseFsdpPrefetch,
                {"BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"});
            result.applied.push_back(
                "fsdp_config.fsdp_backward_prefetch = " + prefetch + " (gathered units counted)");
        }
        if (fsdp.boolean("fsdp_forward_prefetch", in.fsdp.forwardPrefetch))
            result.applied.push_back(std::string("fsdp_config.fsdp_forward_prefetch = ")
                + (in.fsdp.forwardPrefetch ? "true" : "false") + " (gathered units counted)");
        listIgnored(*node, "fsdp_config.",
            {"fsdp_sharding_strategy", "fsdp_offload_params", "fsdp_activation_checkpointing",
                "fsdp_backward_prefetch", "fsdp_forward_prefetch"},
            result);
    }
    result.applied.push_back("distributed_type FSDP -> sharding "
        + std::string(toString(in.sharding)) + ", offload " + std::string(toString(in.offload)));
    // accelerate's accumulate() and the Hugging Face Trainer enter FSDP's
    // no_sync on every micro-batch but the last; only a script that sets
    // GradientAccumulationPlugin(sync_each_batch=True) does not.
    in.fsdp.noSync = isFsdp(in.sharding);
    if (in.fsdp.noSync)
        result.applied.push_back("fsdp.no_sync = true (accelerate accumulates gradients unsharded "
                                 "unless the script sets sync_each_batch)");
}

void readDeepSpeed(MapReader& top, yaml::ProblemList& problems, ImportResult& result)
{
    PlanInput& in = result.input;
    in.sharding = Sharding::Zero2;
    if (const std::optional<YAML::Node> node = top.section("deepspeed_config")) {
        MapReader ds(*node, "deepspeed_config", problems);
        int stage = 2;
        if (ds.integer("zero_stage", stage, 0, 3)) {
            static const Sharding stages[] = {
                Sharding::Ddp, Sharding::Zero1, Sharding::Zero2, Sharding::Zero3};
            in.sharding = stages[stage];
        }
        Offload offload = Offload::None;
        std::string device;
        if (ds.string("offload_optimizer_device", device) && lower(device) != "none")
            offload = Offload::Optimizer;
        if (ds.string("offload_param_device", device) && lower(device) != "none")
            offload = Offload::OptimizerAndParams;
        in.offload = offload;
        ds.integer("gradient_accumulation_steps", in.gradAccum, 1, 65536);
        std::string file;
        if (ds.string("deepspeed_config_file", file))
            result.ignored.push_back(
                "deepspeed_config_file " + file + " (import it with --from-deepspeed)");
    }
    result.applied.push_back("distributed_type DEEPSPEED -> sharding "
        + std::string(toString(in.sharding)) + ", offload " + std::string(toString(in.offload)));
}

void readDistributedType(MapReader& top, yaml::ProblemList& problems, ImportResult& result)
{
    std::string type = "no";
    top.string("distributed_type", type);
    type = lower(type);
    if (type == "fsdp") {
        readFsdp(top, problems, result);
    } else if (type == "deepspeed") {
        readDeepSpeed(top, problems, result);
    } else if (type == "multi_gpu" || type == "no" || type == "multi_cpu") {
        result.input.sharding = Sharding::Ddp;
        result.input.offload = Offload::None;
        result.applied.push_back("distributed_type " + type + " -> sharding ddp");
    } else {
        top.report("distributed_type",
            "got " + yaml::describe(top.value("distributed_type"))
                + ", expected NO, MULTI_GPU, FSDP or DEEPSPEED");
    }
}

void readMixedPrecision(MapReader& top, ImportResult& result)
{
    PlanInput& in = result.input;
    if (!top.choice(
            "mixed_precision", in.precision, parseMixedPrecision, {"no", "fp16", "bf16", "fp8"}))
        return;
    const std::string p = lower(top.value("mixed_precision").Scalar());
    if (p == "fp8")
        result.applied.push_back("fp8 planned as bf16 mixed (FP8 is not modelled)");
    result.applied.push_back(
        "mixed_precision " + p + " -> precision " + std::string(toString(in.precision)));
}

void readProcesses(MapReader& top, ImportResult& result)
{
    PlanInput& in = result.input;
    long long nodes = 1;
    const bool machines = top.integer("num_machines", nodes, 1, 4096);
    long long processes = 0;
    if (top.integer("num_processes", processes, 1, 1 << 20)) {
        if (processes % nodes != 0)
            top.report("num_processes",
                std::to_string(processes) + " is not a multiple of num_machines "
                    + std::to_string(nodes));
        else if (processes / nodes > 1024)
            top.report("num_processes", "more than 1024 per machine");
        else
            in.gpusPerNode = int(processes / nodes);
    } else {
        processes = in.gpusPerNode * nodes;
    }
    if (machines)
        in.nodes = int(nodes);
    result.applied.push_back("num_processes " + std::to_string(processes) + " over num_machines "
        + std::to_string(nodes) + " -> gpus_per_node " + std::to_string(in.gpusPerNode) + ", nodes "
        + std::to_string(in.nodes));
}

} // namespace

common::Result<ImportResult> parseAccelerateYaml(
    std::string_view yaml, const std::string& origin, const PlanInput& base)
{
    yaml::ProblemList problems;
    const YAML::Node root = yaml::load(std::string(yaml), problems);
    if (!problems.isEmpty())
        return problems.toError(origin);
    ImportResult result{base, {}, {}};
    MapReader top(root, {}, problems);
    if (root.IsMap()) {
        readDistributedType(top, problems, result);
        readMixedPrecision(top, result);
        readProcesses(top, result);
        listIgnored(root, "",
            {"distributed_type", "fsdp_config", "deepspeed_config", "mixed_precision",
                "num_machines", "num_processes"},
            result);
    }
    if (!problems.isEmpty())
        return problems.toError(origin);
    if (common::Status valid = validatePlanInput(result.input); !valid)
        return common::Error{origin + ": " + valid.error().message, {}};
    return result;
}

common::Result<ImportResult> importAccelerateYaml(const std::string& path, const PlanInput& base)
{
    const common::Result<std::string> text = yaml::readYamlFile(path);
    if (!text)
        return text.error();
    return parseAccelerateYaml(*text, path, base);
}

} // namespace tb::plan
