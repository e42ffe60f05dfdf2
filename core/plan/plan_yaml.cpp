#include "plan/plan_file.h"

#include "common/atomic_file.h"
#include "yaml/map_reader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iterator>

namespace tb::plan {

using yaml::MapReader;

namespace {

constexpr int kPlanVersion = 1;
constexpr const char* kPrefetchNames[] = {"pre", "post", "none"};

std::optional<BackwardPrefetch> parsePrefetch(std::string_view text)
{
    if (text == "pre")
        return BackwardPrefetch::Pre;
    if (text == "post")
        return BackwardPrefetch::Post;
    if (text == "none")
        return BackwardPrefetch::None;
    return std::nullopt;
}

// The `deepspeed:` and `fsdp:` maps: the settings that size buffers (4.6).
void readFrameworkSettings(MapReader& f, yaml::ProblemList& problems, PlanInput& in)
{
    if (const std::optional<YAML::Node> ds = f.section("deepspeed")) {
        MapReader d(*ds, "deepspeed", problems);
        DeepSpeedSettings& s = in.deepspeed;
        d.number("reduce_bucket_size", s.reduceBucketSize, 0, 1e15);
        d.number("allgather_bucket_size", s.allgatherBucketSize, 0, 1e15);
        bool overlap = false;
        if (d.boolean("overlap_comm", overlap))
            s.overlapComm = overlap;
        d.boolean("contiguous_gradients", s.contiguousGradients);
        d.number("stage3_prefetch_bucket_size", s.prefetchBucketSize, 0, 1e15);
        d.number("stage3_max_live_parameters", s.maxLiveParameters, 0, 1e15);
        d.boolean("pin_memory", s.pinMemory);
        d.checkKeys();
    }
    if (const std::optional<YAML::Node> fsdp = f.section("fsdp")) {
        MapReader d(*fsdp, "fsdp", problems);
        FsdpSettings& s = in.fsdp;
        d.choice("backward_prefetch", s.backwardPrefetch, parsePrefetch, {"pre", "post", "none"});
        d.boolean("forward_prefetch", s.forwardPrefetch);
        d.boolean("limit_all_gathers", s.limitAllGathers);
        d.checkKeys();
    }
}

void readSections(MapReader& f, yaml::ProblemList& problems, PlanInput& in)
{
    if (const std::optional<YAML::Node> lora = f.section("lora")) {
        MapReader l(*lora, "lora", problems);
        l.integer("rank", in.lora.rank, 1, 65536);
        l.number("alpha", in.lora.alpha, 0, 1e9);
        l.number("dropout", in.lora.dropout, 0, 0.999999);
        l.stringList("target_modules", in.lora.targetModules);
        l.checkKeys();
    }
    if (const std::optional<YAML::Node> dataset = f.section("dataset")) {
        MapReader d(*dataset, "dataset", problems);
        d.integer("samples", in.datasetSamples, 0, 1LL << 50);
        d.number("mean_tokens_per_sample", in.meanTokensPerSample, 0, 1e9);
        d.integer("tokens", in.datasetTokens, 0, 1LL << 55);
        d.number("epochs", in.epochs, 1e-6, 1e6);
        d.checkKeys();
    }
    readFrameworkSettings(f, problems, in);
    if (const std::optional<YAML::Node> calibration = f.section("calibration")) {
        MapReader c(*calibration, "calibration", problems);
        c.number("utilisation", in.utilisationOverride, 0, 1);
        c.number("cuda_context_gib", in.cudaContextGiB, 0, 64);
        c.number("allocator_overhead", in.allocatorOverhead, 0, 1);
        c.checkKeys();
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
    yaml::ProblemList problems;
    const YAML::Node root = yaml::load(std::string(yaml), problems);
    if (!problems.isEmpty())
        return problems.toError(origin);
    PlanInput in;
    MapReader f(root, {}, problems);
    f.require({"model"});
    int version = kPlanVersion;
    f.integer("version", version, kPlanVersion, kPlanVersion);
    f.string("model", in.model, false, "a preset name or a config.json path");
    f.choice("method", in.method, parseMethod, methodNames());
    f.choice("precision", in.precision, parsePrecision, precisionNames());
    f.choice("optimizer", in.optimizer, parseOptimizer, optimizerNames());
    f.choice("sharding", in.sharding, parseSharding, shardingNames());
    f.choice("offload", in.offload, parseOffload, offloadNames());
    f.choice("attention", in.attention, parseAttention, attentionNames());
    f.choice("loss", in.loss, parseLossMode, lossModeNames());
    f.boolean("gradient_checkpointing", in.gradientCheckpointing);
    f.integer("loss_chunks", in.lossChunks, 1, 4096);
    f.boolean("ddp_bucket_view", in.ddpBucketView);
    f.integer("micro_batch", in.microBatch, 1, 65536);
    f.integer("seq_len", in.seqLen, 1, 1 << 24);
    f.integer("grad_accum", in.gradAccum, 1, 65536);
    f.boolean("packing", in.packing);
    f.string("vm_size", in.vmSize);
    f.string("gpu", in.gpu);
    f.integer("gpus_per_node", in.gpusPerNode, 0, 1024);
    f.integer("nodes", in.nodes, 1, 4096);
    readSections(f, problems, in);
    f.checkKeys();
    if (!problems.isEmpty())
        return problems.toError(origin);
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
