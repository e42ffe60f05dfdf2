#include "plan/plan_file.h"

#include "common/atomic_file.h"
#include "common/text.h"
#include "model/yaml_fields.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

// accelerate's config YAML (accelerate config / default_config.yaml). Its
// files carry many keys a plan has no use for (IPs, ranks, dynamo), so
// unknown keys are listed as ignored, not errors; known keys are typed.
namespace tb::plan {

namespace {

struct Reader {
    const std::string& origin;
    std::vector<std::string>& problems;

    std::optional<std::string> text(const YAML::Node& map, const char* key, const std::string& path)
    {
        const YAML::Node node = map[key];
        if (!node.IsDefined() || node.IsNull())
            return std::nullopt;
        if (!node.IsScalar()) {
            problems.push_back(origin + ":" + std::to_string(node.Mark().line + 1) + ": " + path
                + ": expected text");
            return std::nullopt;
        }
        return node.Scalar();
    }

    std::optional<long long> integer(const YAML::Node& map, const char* key,
        const std::string& path, long long min, long long max)
    {
        const YAML::Node node = map[key];
        if (!node.IsDefined() || node.IsNull())
            return std::nullopt;
        long long value = 0;
        bool ok = node.IsScalar();
        if (ok) {
            try {
                value = node.as<long long>();
            } catch (...) {
                ok = false;
            }
        }
        if (!ok || value < min || value > max) {
            problems.push_back(origin + ":" + std::to_string(node.Mark().line + 1) + ": " + path
                + ": got "
                + (node.IsScalar() ? "'" + node.Scalar() + "'" : std::string("a non-scalar"))
                + ", expected an integer from " + std::to_string(min) + " to "
                + std::to_string(max));
            return std::nullopt;
        }
        return value;
    }

    std::optional<bool> boolean(const YAML::Node& map, const char* key, const std::string& path)
    {
        const YAML::Node node = map[key];
        if (!node.IsDefined() || node.IsNull())
            return std::nullopt;
        try {
            if (node.IsScalar())
                return node.as<bool>();
        } catch (...) {
        }
        problems.push_back(origin + ":" + std::to_string(node.Mark().line + 1) + ": " + path
            + ": expected true or false");
        return std::nullopt;
    }
};

// fsdp_backward_prefetch and fsdp_forward_prefetch: how many units are
// gathered at once (docs/PLANNER.md 4.6).
void readFsdpPrefetch(Reader& r, const YAML::Node& fsdp, FsdpSettings& settings,
    ImportResult& result)
{
    if (const auto prefetch =
            r.text(fsdp, "fsdp_backward_prefetch", "fsdp_config.fsdp_backward_prefetch")) {
        const std::string p = common::toLower(*prefetch);
        if (p == "backward_pre")
            settings.backwardPrefetch = BackwardPrefetch::Pre;
        else if (p == "backward_post")
            settings.backwardPrefetch = BackwardPrefetch::Post;
        else if (p == "no_prefetch" || p == "none")
            settings.backwardPrefetch = BackwardPrefetch::None;
        else
            r.problems.push_back(r.origin + ": fsdp_config.fsdp_backward_prefetch: got '" + *prefetch
                + "', expected BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH");
        result.applied.push_back(
            "fsdp_config.fsdp_backward_prefetch = " + *prefetch + " (gathered units counted)");
    }
    if (const auto forward =
            r.boolean(fsdp, "fsdp_forward_prefetch", "fsdp_config.fsdp_forward_prefetch")) {
        settings.forwardPrefetch = *forward;
        result.applied.push_back(std::string("fsdp_config.fsdp_forward_prefetch = ")
            + (*forward ? "true" : "false") + " (gathered units counted)");
    }
}

} // namespace

common::Result<ImportResult> parseAccelerateYaml(
    std::string_view yaml, const std::string& origin, const PlanInput& base)
{
    std::vector<std::string> problems;
    const YAML::Node root = model::loadYaml(std::string(yaml), origin, &problems);
    if (!problems.empty())
        return common::Error{model::joinProblems(problems), {}};
    if (!root.IsMap())
        return common::Error::at(origin, {}, "expected a mapping of accelerate settings");
    ImportResult result{base, {}, {}};
    PlanInput& in = result.input;
    Reader r{origin, problems};
    try {
        const std::string type =
            common::toLower(r.text(root, "distributed_type", "distributed_type").value_or("no"));
        if (type == "fsdp") {
            in.sharding = Sharding::FsdpFull;
            const YAML::Node fsdp = root["fsdp_config"];
            if (fsdp.IsDefined() && fsdp.IsMap()) {
                if (const auto strategy = r.text(
                        fsdp, "fsdp_sharding_strategy", "fsdp_config.fsdp_sharding_strategy")) {
                    const std::string s = common::toLower(*strategy);
                    if (s == "full_shard" || s == "1")
                        in.sharding = Sharding::FsdpFull;
                    else if (s == "shard_grad_op" || s == "2")
                        in.sharding = Sharding::FsdpGradOp;
                    else if (s == "no_shard" || s == "3")
                        in.sharding = Sharding::Ddp;
                    else if (s == "hybrid_shard" || s == "4" || s == "hybrid_shard_zero2"
                        || s == "5")
                        in.sharding = Sharding::FsdpHybrid;
                    else
                        problems.push_back(origin + ": fsdp_config.fsdp_sharding_strategy: got '"
                            + *strategy
                            + "', expected FULL_SHARD, SHARD_GRAD_OP, NO_SHARD or HYBRID_SHARD");
                    if (s == "hybrid_shard_zero2" || s == "5")
                        result.applied.push_back("HYBRID_SHARD_ZERO2 planned as HYBRID_SHARD");
                }
                // accelerate's default is no offload: an FSDP config without
                // the key offloads nothing, whatever the base plan had.
                const auto off =
                    r.boolean(fsdp, "fsdp_offload_params", "fsdp_config.fsdp_offload_params");
                in.offload = off.value_or(false) ? Offload::OptimizerAndParams : Offload::None;
                if (const auto ckpt = r.boolean(fsdp, "fsdp_activation_checkpointing",
                        "fsdp_config.fsdp_activation_checkpointing"))
                    in.gradientCheckpointing = *ckpt;
                readFsdpPrefetch(r, fsdp, in.fsdp, result);
                static const char* used[] = {"fsdp_sharding_strategy", "fsdp_offload_params",
                    "fsdp_activation_checkpointing", "fsdp_backward_prefetch",
                    "fsdp_forward_prefetch"};
                for (auto it = fsdp.begin(); it != fsdp.end(); ++it) {
                    const std::string key = it->first.Scalar();
                    if (std::find(std::begin(used), std::end(used), key) == std::end(used))
                        result.ignored.push_back("fsdp_config." + key);
                }
            }
            result.applied.push_back("distributed_type FSDP -> sharding "
                + std::string(toString(in.sharding)) + ", offload "
                + std::string(toString(in.offload)));
        } else if (type == "deepspeed") {
            const YAML::Node ds = root["deepspeed_config"];
            in.sharding = Sharding::Zero2;
            if (ds.IsDefined() && ds.IsMap()) {
                if (const auto stage =
                        r.integer(ds, "zero_stage", "deepspeed_config.zero_stage", 0, 3)) {
                    static const Sharding stages[] = {
                        Sharding::Ddp, Sharding::Zero1, Sharding::Zero2, Sharding::Zero3};
                    in.sharding = stages[*stage];
                }
                Offload offload = Offload::None;
                if (const auto dev = r.text(ds, "offload_optimizer_device",
                        "deepspeed_config.offload_optimizer_device");
                    dev && common::toLower(*dev) != "none")
                    offload = Offload::Optimizer;
                if (const auto dev =
                        r.text(ds, "offload_param_device", "deepspeed_config.offload_param_device");
                    dev && common::toLower(*dev) != "none")
                    offload = Offload::OptimizerAndParams;
                in.offload = offload;
                if (const auto accum = r.integer(ds, "gradient_accumulation_steps",
                        "deepspeed_config.gradient_accumulation_steps", 1, 65536))
                    in.gradAccum = int(*accum);
                if (const auto file = r.text(
                        ds, "deepspeed_config_file", "deepspeed_config.deepspeed_config_file"))
                    result.ignored.push_back(
                        "deepspeed_config_file " + *file + " (import it with --from-deepspeed)");
            }
            result.applied.push_back("distributed_type DEEPSPEED -> sharding "
                + std::string(toString(in.sharding)) + ", offload "
                + std::string(toString(in.offload)));
        } else if (type == "multi_gpu" || type == "no" || type == "multi_cpu") {
            in.sharding = Sharding::Ddp;
            in.offload = Offload::None;
            result.applied.push_back("distributed_type " + type + " -> sharding ddp");
        } else {
            problems.push_back(origin + ": distributed_type: got '" + type
                + "', expected NO, MULTI_GPU, FSDP or DEEPSPEED");
        }

        if (const auto mp = r.text(root, "mixed_precision", "mixed_precision")) {
            const std::string p = common::toLower(*mp);
            if (p == "bf16")
                in.precision = Precision::Bf16Mixed;
            else if (p == "fp16")
                in.precision = Precision::Fp16Mixed;
            else if (p == "no")
                in.precision = Precision::Fp32;
            else if (p == "fp8") {
                in.precision = Precision::Bf16Mixed;
                result.applied.push_back("fp8 planned as bf16 mixed (FP8 is not modelled)");
            } else
                problems.push_back(origin + ": mixed_precision: got '" + *mp
                    + "', expected no, fp16, bf16 or fp8");
            result.applied.push_back(
                "mixed_precision " + p + " -> precision " + std::string(toString(in.precision)));
        }
        const auto machines = r.integer(root, "num_machines", "num_machines", 1, 4096);
        const auto processes = r.integer(root, "num_processes", "num_processes", 1, 1 << 20);
        const long long nodes = machines.value_or(1);
        if (processes) {
            if (*processes % nodes != 0)
                problems.push_back(origin + ": num_processes: " + std::to_string(*processes)
                    + " is not a multiple of num_machines " + std::to_string(nodes));
            else if (*processes / nodes > 1024)
                problems.push_back(origin + ": num_processes: more than 1024 per machine");
            else
                in.gpusPerNode = int(*processes / nodes);
        }
        if (machines)
            in.nodes = int(nodes);
        result.applied.push_back("num_processes "
            + std::to_string(processes.value_or(in.gpusPerNode * nodes)) + " over num_machines "
            + std::to_string(nodes) + " -> gpus_per_node " + std::to_string(in.gpusPerNode)
            + ", nodes " + std::to_string(in.nodes));
        static const char* used[] = {"distributed_type", "fsdp_config", "deepspeed_config",
            "mixed_precision", "num_machines", "num_processes"};
        for (auto it = root.begin(); it != root.end(); ++it) {
            const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
            if (std::find(std::begin(used), std::end(used), key) == std::end(used))
                result.ignored.push_back(key);
        }
    } catch (const std::exception& e) {
        problems.push_back(origin + ": unexpected content: " + e.what());
    }
    if (!problems.empty())
        return common::Error{model::joinProblems(problems), {}};
    if (common::Status valid = validatePlanInput(in); !valid)
        return common::Error{origin + ": " + valid.error().message, {}};
    return result;
}

common::Result<ImportResult> importAccelerateYaml(const std::string& path, const PlanInput& base)
{
    const common::Result<std::string> text = common::readFile(path);
    if (!text)
        return text.error();
    return parseAccelerateYaml(*text, path, base);
}

} // namespace tb::plan
