#include "plan/plan_file.h"

#include "common/atomic_file.h"
#include "model/yaml_fields.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iterator>

namespace tb::plan {

using model::YamlFields;

namespace {

constexpr int kPlanVersion = 1;

template <typename Enum, typename Parse>
void readEnum(YamlFields& f, const char* key, Enum& target, Parse parse,
    const std::vector<std::string>& names)
{
    const auto text = f.text(key, false);
    if (!text)
        return;
    if (const auto value = parse(*text)) {
        target = *value;
        return;
    }
    std::string list;
    for (const std::string& name : names)
        list += (list.empty() ? "" : ", ") + name;
    f.problem(f.child(key, false), key, "got '" + *text + "', expected one of " + list);
}

constexpr const char* kPrefetchNames[] = {"pre", "post", "none"};

// The `deepspeed:` and `fsdp:` maps: the settings that size buffers (4.6).
void readFrameworkSettings(YamlFields& f, const std::string& origin,
    std::vector<std::string>& problems, PlanInput& in)
{
    const YAML::Node ds = f.child("deepspeed", false);
    if (ds.IsDefined() && !ds.IsNull()) {
        YamlFields d(ds, origin, "deepspeed", &problems);
        DeepSpeedSettings& s = in.deepspeed;
        s.reduceBucketSize = d.number("reduce_bucket_size", false, 0, 1e15).value_or(s.reduceBucketSize);
        s.allgatherBucketSize =
            d.number("allgather_bucket_size", false, 0, 1e15).value_or(s.allgatherBucketSize);
        if (const auto overlap = d.boolean("overlap_comm", false))
            s.overlapComm = *overlap;
        s.contiguousGradients = d.boolean("contiguous_gradients", false).value_or(s.contiguousGradients);
        s.prefetchBucketSize =
            d.number("stage3_prefetch_bucket_size", false, 0, 1e15).value_or(s.prefetchBucketSize);
        s.maxLiveParameters =
            d.number("stage3_max_live_parameters", false, 0, 1e15).value_or(s.maxLiveParameters);
        s.pinMemory = d.boolean("pin_memory", false).value_or(s.pinMemory);
        d.finish();
    }
    const YAML::Node fsdp = f.child("fsdp", false);
    if (fsdp.IsDefined() && !fsdp.IsNull()) {
        YamlFields d(fsdp, origin, "fsdp", &problems);
        FsdpSettings& s = in.fsdp;
        if (const auto prefetch = d.text("backward_prefetch", false)) {
            const auto* end = std::end(kPrefetchNames);
            const auto* it = std::find(std::begin(kPrefetchNames), end, *prefetch);
            if (it == end)
                d.problem(d.child("backward_prefetch", false), "backward_prefetch",
                    "got '" + *prefetch + "', expected one of pre, post, none");
            else
                s.backwardPrefetch = BackwardPrefetch(it - std::begin(kPrefetchNames));
        }
        s.forwardPrefetch = d.boolean("forward_prefetch", false).value_or(s.forwardPrefetch);
        s.limitAllGathers = d.boolean("limit_all_gathers", false).value_or(s.limitAllGathers);
        d.finish();
    }
}

void writeFrameworkSettings(YAML::Emitter& out, const PlanInput& in)
{
    const DeepSpeedSettings& d = in.deepspeed;
    out << YAML::Key << "deepspeed" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "reduce_bucket_size" << YAML::Value << d.reduceBucketSize;
    out << YAML::Key << "allgather_bucket_size" << YAML::Value << d.allgatherBucketSize;
    if (d.overlapComm) // absent: DeepSpeed's default for the stage
        out << YAML::Key << "overlap_comm" << YAML::Value << *d.overlapComm;
    out << YAML::Key << "contiguous_gradients" << YAML::Value << d.contiguousGradients;
    out << YAML::Key << "stage3_prefetch_bucket_size" << YAML::Value << d.prefetchBucketSize;
    out << YAML::Key << "stage3_max_live_parameters" << YAML::Value << d.maxLiveParameters;
    out << YAML::Key << "pin_memory" << YAML::Value << d.pinMemory;
    out << YAML::EndMap;
    out << YAML::Key << "fsdp" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "backward_prefetch" << YAML::Value
        << kPrefetchNames[int(in.fsdp.backwardPrefetch)];
    out << YAML::Key << "forward_prefetch" << YAML::Value << in.fsdp.forwardPrefetch;
    out << YAML::Key << "limit_all_gathers" << YAML::Value << in.fsdp.limitAllGathers;
    out << YAML::EndMap;
}

} // namespace

common::Result<PlanInput> parsePlanYaml(std::string_view yaml, const std::string& origin)
{
    std::vector<std::string> problems;
    const YAML::Node root = model::loadYaml(std::string(yaml), origin, &problems);
    if (!problems.empty())
        return common::Error{model::joinProblems(problems), {}};
    PlanInput in;
    YamlFields f(root, origin, {}, &problems);
    f.integer("version", false, kPlanVersion, kPlanVersion);
    in.model = f.text("model", true).value_or(in.model);
    readEnum(f, "method", in.method, parseMethod, methodNames());
    readEnum(f, "precision", in.precision, parsePrecision, precisionNames());
    readEnum(f, "optimizer", in.optimizer, parseOptimizer, optimizerNames());
    readEnum(f, "sharding", in.sharding, parseSharding, shardingNames());
    readEnum(f, "offload", in.offload, parseOffload, offloadNames());
    readEnum(f, "attention", in.attention, parseAttention, attentionNames());
    readEnum(f, "loss", in.loss, parseLossMode, lossModeNames());
    in.gradientCheckpointing =
        f.boolean("gradient_checkpointing", false).value_or(in.gradientCheckpointing);
    in.lossChunks = int(f.integer("loss_chunks", false, 1, 4096).value_or(in.lossChunks));
    in.ddpBucketView = f.boolean("ddp_bucket_view", false).value_or(in.ddpBucketView);
    in.microBatch = int(f.integer("micro_batch", false, 1, 65536).value_or(in.microBatch));
    in.seqLen = int(f.integer("seq_len", false, 1, 1 << 24).value_or(in.seqLen));
    in.gradAccum = int(f.integer("grad_accum", false, 1, 65536).value_or(in.gradAccum));
    in.packing = f.boolean("packing", false).value_or(in.packing);
    in.vmSize = f.text("vm_size", false).value_or(in.vmSize);
    in.gpu = f.text("gpu", false).value_or(in.gpu);
    in.gpusPerNode = int(f.integer("gpus_per_node", false, 0, 1024).value_or(in.gpusPerNode));
    in.nodes = int(f.integer("nodes", false, 1, 4096).value_or(in.nodes));

    const YAML::Node lora = f.child("lora", false);
    if (lora.IsDefined() && !lora.IsNull()) {
        YamlFields l(lora, origin, "lora", &problems);
        in.lora.rank = int(l.integer("rank", false, 1, 65536).value_or(in.lora.rank));
        in.lora.alpha = l.number("alpha", false, 0, 1e9).value_or(in.lora.alpha);
        in.lora.dropout = l.number("dropout", false, 0, 0.999999).value_or(in.lora.dropout);
        if (l.has("target_modules"))
            in.lora.targetModules = l.textList("target_modules", false);
        l.finish();
    }
    const YAML::Node dataset = f.child("dataset", false);
    if (dataset.IsDefined() && !dataset.IsNull()) {
        YamlFields d(dataset, origin, "dataset", &problems);
        in.datasetSamples =
            d.integer("samples", false, 0, std::int64_t(1) << 50).value_or(in.datasetSamples);
        in.meanTokensPerSample =
            d.number("mean_tokens_per_sample", false, 0, 1e9).value_or(in.meanTokensPerSample);
        in.datasetTokens =
            d.integer("tokens", false, 0, std::int64_t(1) << 55).value_or(in.datasetTokens);
        in.epochs = d.number("epochs", false, 1e-6, 1e6).value_or(in.epochs);
        d.finish();
    }
    readFrameworkSettings(f, origin, problems, in);
    const YAML::Node calibration = f.child("calibration", false);
    if (calibration.IsDefined() && !calibration.IsNull()) {
        YamlFields c(calibration, origin, "calibration", &problems);
        in.utilisationOverride = c.number("utilisation", false, 0, 1).value_or(0);
        in.cudaContextGiB = c.number("cuda_context_gib", false, 0, 64).value_or(0);
        in.allocatorOverhead = c.number("allocator_overhead", false, 0, 1).value_or(0);
        c.finish();
    }
    f.finish();
    if (!problems.empty())
        return common::Error{model::joinProblems(problems), {}};
    if (common::Status valid = validatePlanInput(in); !valid)
        return common::Error{origin + ": " + valid.error().message, valid.error().hint};
    return in;
}

common::Result<PlanInput> loadPlanYaml(const std::string& path)
{
    const common::Result<std::string> text = common::readFile(path);
    if (!text)
        return text.error();
    return parsePlanYaml(*text, path);
}

std::string planToYaml(const PlanInput& in)
{
    YAML::Emitter out;
    out << YAML::BeginMap;
    out << YAML::Key << "version" << YAML::Value << kPlanVersion;
    out << YAML::Key << "model" << YAML::Value << in.model;
    out << YAML::Key << "method" << YAML::Value << std::string(toString(in.method));
    out << YAML::Key << "lora" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "rank" << YAML::Value << in.lora.rank;
    out << YAML::Key << "alpha" << YAML::Value << in.lora.alpha;
    out << YAML::Key << "dropout" << YAML::Value << in.lora.dropout;
    out << YAML::Key << "target_modules" << YAML::Value << YAML::Flow << in.lora.targetModules;
    out << YAML::EndMap;
    out << YAML::Key << "precision" << YAML::Value << std::string(toString(in.precision));
    out << YAML::Key << "optimizer" << YAML::Value << std::string(toString(in.optimizer));
    out << YAML::Key << "sharding" << YAML::Value << std::string(toString(in.sharding));
    out << YAML::Key << "offload" << YAML::Value << std::string(toString(in.offload));
    out << YAML::Key << "gradient_checkpointing" << YAML::Value << in.gradientCheckpointing;
    out << YAML::Key << "attention" << YAML::Value << std::string(toString(in.attention));
    out << YAML::Key << "loss" << YAML::Value << std::string(toString(in.loss));
    out << YAML::Key << "loss_chunks" << YAML::Value << in.lossChunks;
    out << YAML::Key << "ddp_bucket_view" << YAML::Value << in.ddpBucketView;
    out << YAML::Key << "micro_batch" << YAML::Value << in.microBatch;
    out << YAML::Key << "seq_len" << YAML::Value << in.seqLen;
    out << YAML::Key << "grad_accum" << YAML::Value << in.gradAccum;
    out << YAML::Key << "packing" << YAML::Value << in.packing;
    out << YAML::Key << "vm_size" << YAML::Value << in.vmSize;
    out << YAML::Key << "gpu" << YAML::Value << in.gpu;
    out << YAML::Key << "gpus_per_node" << YAML::Value << in.gpusPerNode;
    out << YAML::Key << "nodes" << YAML::Value << in.nodes;
    out << YAML::Key << "dataset" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "samples" << YAML::Value << in.datasetSamples;
    out << YAML::Key << "mean_tokens_per_sample" << YAML::Value << in.meanTokensPerSample;
    out << YAML::Key << "tokens" << YAML::Value << in.datasetTokens;
    out << YAML::Key << "epochs" << YAML::Value << in.epochs;
    out << YAML::EndMap;
    writeFrameworkSettings(out, in);
    out << YAML::Key << "calibration" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "utilisation" << YAML::Value << in.utilisationOverride;
    out << YAML::Key << "cuda_context_gib" << YAML::Value << in.cudaContextGiB;
    out << YAML::Key << "allocator_overhead" << YAML::Value << in.allocatorOverhead;
    out << YAML::EndMap;
    out << YAML::EndMap;
    return "# Tunebench plan (docs/PLANNER.md, Plan files)\n" + std::string(out.c_str()) + "\n";
}

common::Status savePlanYaml(const std::string& path, const PlanInput& input)
{
    return common::writeFileAtomic(path, planToYaml(input));
}

} // namespace tb::plan
