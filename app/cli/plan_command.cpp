#include "arg_parser.h"
#include "commands.h"
#include "plan_calibrate.h"
#include "plan_report.h"

#include "common/text.h"
#include "common/units.h"
#include "plan/catalog.h"
#include "plan/estimator.h"
#include "plan/plan_file.h"
#include "plan/plan_json.h"
#include "plan/recommender.h"

#include <iostream>
#include <optional>
#include <sstream>

namespace tb::cli {

namespace {

using common::Error;
using common::Status;

std::string names(const std::vector<std::string>& list)
{
    std::string text;
    for (const std::string& name : list)
        text += (text.empty() ? "" : "|") + name;
    return text;
}

ArgParser makeParser()
{
    ArgParser p("plan",
        "Per-GPU memory, throughput, time and cost of a fine-tune, with the formula and source of\n"
        "every figure, and the Azure VM sizes that fit. With no options it plans the default:\n"
        "Llama-3.1-8B, LoRA r=16 on every linear layer, bf16 mixed, AdamW, micro-batch 4 x 2048\n"
        "tokens x 4 accumulation, on one Standard_NC24ads_A100_v4 (A100 80GB), 50,000 samples x\n"
        "1,000 tokens x 3 epochs (docs/PLANNER.md, Plan inputs).");
    p.addOption("model", "NAME|PATH", "preset name, HF repo id, or a config.json (or its folder)");
    p.addOption("method", names(plan::methodNames()), "training method");
    p.addOption("lora-rank", "N", "LoRA rank (default 16)");
    p.addOption("lora-alpha", "X", "LoRA alpha (default 32; does not change memory)");
    p.addOption(
        "lora-dropout", "P", "LoRA dropout, 0 <= P < 1 (default 0.05; > 0 stores dropped inputs)");
    p.addOption("lora-targets", "LIST",
        "comma-separated module names (default: every linear layer of the blocks)");
    p.addOption(
        "precision", names(plan::precisionNames()), "numeric precision (default bf16-mixed)");
    p.addOption("optimizer", names(plan::optimizerNames()), "optimizer (default adamw)");
    p.addOption(
        "sharding", "none|" + names(plan::shardingNames()), "data-parallel strategy (default ddp)");
    p.addOption("offload", names(plan::offloadNames()), "CPU offload (ZeRO or FSDP only)");
    p.addFlag("grad-ckpt", "activation checkpointing on every layer (default)");
    p.addFlag("no-grad-ckpt", "keep every layer's activations");
    p.addOption("attention", names(plan::attentionNames()), "attention kernel (default sdpa)");
    p.addOption(
        "loss", names(plan::lossModeNames()), "how the loss treats logits (default chunked)");
    p.addOption("loss-chunks", "N", "chunks of the chunked/fused loss (default 8)");
    p.addOption("micro-batch", "N", "sequences per GPU per forward (default 4)");
    p.addOption("seq-len", "N", "tokens per sequence (default 2048)");
    p.addOption("grad-accum", "N", "micro-batches per optimizer step (default 4)");
    p.addOption("gpus-per-node", "N", "GPUs used per node (default: all of the VM's)");
    p.addOption("nodes", "N", "nodes (default 1)");
    p.addOption(
        "gpu", "NAME", "a GPU from presets/hardware/gpus.yaml (plans without a VM: no price)");
    p.addOption("vm", "AZURE_VM_SIZE",
        "an Azure VM size, e.g. Standard_ND96amsr_A100_v4 (sets GPU and GPUs per node)");
    p.addOption("dataset-tokens", "N", "tokens in the dataset (instead of samples x mean tokens)");
    p.addOption("dataset-samples", "N", "samples in the dataset (default 50000)");
    p.addOption("mean-tokens", "N", "mean tokens per sample (default 1000)");
    p.addOption("epochs", "X", "passes over the dataset (default 3)");
    p.addFlag("no-packing", "one padded sample per sequence instead of packing");
    p.addOption("utilisation", "F",
        "achievable fraction of dense peak, 0 < F <= 1 (default: the GPU preset's)");
    p.addOption("plan", "FILE.yaml", "start from a saved plan");
    p.addOption("from-deepspeed", "FILE.json", "apply a DeepSpeed config");
    p.addOption("from-accelerate", "FILE.yaml", "apply an accelerate config");
    p.addOption("save-plan", "FILE.yaml", "write the resulting plan as YAML (atomically)");
    p.addFlag("explain", "show the formula, numbers and source of every figure");
    p.addFlag("recommend", "rank Azure VM sizes x 1..16 nodes x strategies that fit");
    p.addOption("rank-by", "cost|time", "ranking of --recommend (default cost)");
    p.addOption("max-nodes", "N", "largest node count --recommend may use (default 16)");
    p.addOption("time-budget", "HOURS", "--recommend: reject options slower than this");
    p.addOption("max-usd-per-hour", "USD", "--recommend: reject options dearer per hour");
    p.addFlag("runnable-only",
        "--recommend: only GPUs Tunebench's own trainer runs on (NVIDIA, CUDA 13)");
    p.addFlag("calibrate",
        "plan --calibrate RUN_DIR...: hold runs against their plans and write the calibration "
        "(utilisation, allocator reserve per device) that later plans apply");
    p.addOption("calibration", "FILE",
        "calibration file to write or apply (default $TUNEBENCH_CALIBRATION, else "
        "~/.config/tunebench/calibration.json)");
    p.addFlag("no-calibration", "plan without the calibration file");
    p.addFlag("json", "one JSON object on stdout (docs/PLAN_JSON.md)");
    p.addOption("presets", "DIR", "presets folder (default: found automatically)");
    p.addFlag("list-models", "list the model presets and exit");
    p.addFlag("list-vms", "list the Azure VM sizes and exit");
    return p;
}

template <typename Enum, typename Parse>
Status readEnum(const ArgParser& p, const char* option, Enum& target, Parse parse,
    const std::vector<std::string>& valid)
{
    if (!p.isSet(option))
        return common::Ok{};
    const std::string text = p.value(option);
    if (const auto value = parse(text)) {
        target = *value;
        return common::Ok{};
    }
    return Error{
        "plan: --" + std::string(option) + ": got '" + text + "', expected " + names(valid), {}};
}

#define TB_TRY(expr)                                                                               \
    do {                                                                                           \
        if (Status tbStatus = (expr); !tbStatus)                                                   \
            return tbStatus.error();                                                               \
    } while (0)

#define TB_INT(option, target, min, max)                                                           \
    do {                                                                                           \
        if (p.isSet(option)) {                                                                     \
            const auto value = p.integer(option, 0, min, max);                                     \
            if (!value)                                                                            \
                return value.error();                                                              \
            target = static_cast<decltype(target)>(*value);                                        \
        }                                                                                          \
    } while (0)

#define TB_REAL(option, target, min, max)                                                          \
    do {                                                                                           \
        if (p.isSet(option)) {                                                                     \
            const auto value = p.number(option, 0, min, max);                                      \
            if (!value)                                                                            \
                return value.error();                                                              \
            target = *value;                                                                       \
        }                                                                                          \
    } while (0)

common::Result<plan::PlanInput> buildInput(const ArgParser& p, std::ostream& notes)
{
    plan::PlanInput in;
    if (p.isSet("plan")) {
        common::Result<plan::PlanInput> loaded = plan::loadPlanYaml(p.value("plan"));
        if (!loaded)
            return loaded.error();
        in = *loaded;
    }
    for (const char* option : {"from-deepspeed", "from-accelerate"}) {
        if (!p.isSet(option))
            continue;
        const bool deepspeed = std::string(option) == "from-deepspeed";
        common::Result<plan::ImportResult> imported = deepspeed
            ? plan::importDeepSpeedJson(p.value(option), in)
            : plan::importAccelerateYaml(p.value(option), in);
        if (!imported)
            return imported.error();
        in = imported->input;
        for (const std::string& line : imported->applied)
            notes << "imported: " << line << "\n";
        for (const std::string& line : imported->ignored)
            notes << "ignored: " << line << "\n";
    }
    if (p.isSet("model"))
        in.model = p.value("model");
    TB_TRY(readEnum(p, "method", in.method, plan::parseMethod, plan::methodNames()));
    TB_TRY(readEnum(p, "precision", in.precision, plan::parsePrecision, plan::precisionNames()));
    TB_TRY(readEnum(p, "optimizer", in.optimizer, plan::parseOptimizer, plan::optimizerNames()));
    TB_TRY(readEnum(p, "sharding", in.sharding, plan::parseSharding, plan::shardingNames()));
    TB_TRY(readEnum(p, "offload", in.offload, plan::parseOffload, plan::offloadNames()));
    TB_TRY(readEnum(p, "attention", in.attention, plan::parseAttention, plan::attentionNames()));
    TB_TRY(readEnum(p, "loss", in.loss, plan::parseLossMode, plan::lossModeNames()));
    TB_INT("lora-rank", in.lora.rank, 1, 65536);
    TB_REAL("lora-alpha", in.lora.alpha, 0, 1e9);
    TB_REAL("lora-dropout", in.lora.dropout, 0, 0.999999);
    if (p.isSet("lora-targets")) {
        in.lora.targetModules.clear();
        for (const std::string& name : common::split(p.value("lora-targets"), ','))
            if (!common::trim(name).empty())
                in.lora.targetModules.push_back(common::trim(name));
    }
    if (p.isSet("grad-ckpt") && p.isSet("no-grad-ckpt"))
        return Error{"plan: --grad-ckpt and --no-grad-ckpt contradict each other", {}};
    if (p.isSet("grad-ckpt"))
        in.gradientCheckpointing = true;
    if (p.isSet("no-grad-ckpt"))
        in.gradientCheckpointing = false;
    TB_INT("loss-chunks", in.lossChunks, 1, 4096);
    TB_INT("micro-batch", in.microBatch, 1, 65536);
    TB_INT("seq-len", in.seqLen, 1, 1 << 24);
    TB_INT("grad-accum", in.gradAccum, 1, 65536);
    if (p.isSet("vm")) {
        in.vmSize = p.value("vm");
        in.gpu.clear();
        in.gpusPerNode = 0; // all of the VM's GPUs unless --gpus-per-node says otherwise
    } else if (p.isSet("gpu")) {
        in.vmSize.clear();
    }
    if (p.isSet("gpu"))
        in.gpu = p.value("gpu");
    TB_INT("gpus-per-node", in.gpusPerNode, 1, 1024);
    TB_INT("nodes", in.nodes, 1, 4096);
    TB_INT("dataset-tokens", in.datasetTokens, 1, (long long)(1) << 55);
    TB_INT("dataset-samples", in.datasetSamples, 1, (long long)(1) << 50);
    TB_REAL("mean-tokens", in.meanTokensPerSample, 1, 1e9);
    TB_REAL("epochs", in.epochs, 1e-6, 1e6);
    if (p.isSet("no-packing"))
        in.packing = false;
    TB_REAL("utilisation", in.utilisationOverride, 1e-6, 1);
    return in;
}

common::Result<plan::RecommendOptions> recommendOptions(const ArgParser& p)
{
    plan::RecommendOptions options;
    if (p.isSet("rank-by")) {
        const std::string by = common::toLower(p.value("rank-by"));
        if (by == "cost")
            options.rankBy = plan::RankBy::Cost;
        else if (by == "time")
            options.rankBy = plan::RankBy::Time;
        else if (by == "budget" || by == "cheapest-within-budget")
            options.rankBy = plan::RankBy::CheapestWithinBudget;
        else
            return Error{"plan: --rank-by: got '" + by + "', expected cost, time or budget", {}};
    }
    TB_INT("max-nodes", options.maxNodes, 1, 16);
    TB_REAL("time-budget", options.timeBudgetHours, 1e-6, 1e7);
    TB_REAL("max-usd-per-hour", options.maxUsdPerHour, 1e-6, 1e9);
    options.trainerRunnableOnly = p.isSet("runnable-only");
    if (options.rankBy == plan::RankBy::CheapestWithinBudget && options.timeBudgetHours <= 0)
        return Error{"plan: --rank-by budget needs --time-budget HOURS", {}};
    return options;
}

int fail(const Error& error)
{
    std::cerr << error.message << "\n";
    if (!error.hint.empty())
        std::cerr << "hint: " << error.hint << "\n";
    return kExitUsage;
}

} // namespace

int runPlan(const Args& args)
{
    ArgParser p = makeParser();
    if (Status parsed = p.parse(args); !parsed)
        return fail(parsed.error());
    if (p.helpRequested()) {
        std::cout << p.helpText();
        return kExitOk;
    }
    common::Result<plan::Catalog> catalog =
        p.isSet("presets") ? plan::Catalog::load(p.value("presets")) : plan::Catalog::loadDefault();
    if (!catalog)
        return fail(catalog.error());
    if (p.isSet("list-models")) {
        for (const model::ModelSpec& m : catalog->models())
            std::cout << m.name << "  (" << m.hfRepoId << ")\n";
        return kExitOk;
    }
    if (p.isSet("list-vms")) {
        for (const plan::VmSize& vm : catalog->vms())
            std::cout << vm.name << "  " << vm.gpusPerVm << " x " << vm.gpuId << "  " << vm.status
                      << (vm.usdPerHour ? "  $" + common::formatFixed(*vm.usdPerHour, 3) + "/h"
                                        : "  no price")
                      << "\n";
        return kExitOk;
    }
    if (p.isSet("calibrate"))
        return runCalibrate(p, *catalog);
    const bool json = p.isSet("json");
    std::ostringstream notes;
    common::Result<plan::PlanInput> input = buildInput(p, notes);
    if (!input)
        return fail(input.error());
    if (Status calibrated = applyCalibrationFile(p, *catalog, input.value()); !calibrated)
        return fail(calibrated.error());
    common::Result<plan::RecommendOptions> options = recommendOptions(p);
    if (!options)
        return fail(options.error());
    const plan::EstimateOptions estimate{true};
    common::Result<plan::PlanResult> result = plan::planFromCatalog(*input, *catalog, estimate);
    if (!result)
        return fail(result.error());
    if (p.isSet("save-plan")) {
        if (Status saved = plan::savePlanYaml(p.value("save-plan"), *input); !saved)
            return fail(saved.error());
    }
    const common::Result<model::ModelSpec> spec = catalog->resolveModel(input->model);
    const common::Result<plan::ResolvedHardware> hardware = plan::resolveHardware(*input, *catalog);
    if (!spec || !hardware) // planFromCatalog resolved both already; kept for safety
        return fail(!spec ? spec.error() : hardware.error());
    // Scaling from one node to at least 8 (or the plan's own count).
    const std::vector<plan::ScalingPoint> scaling =
        plan::scalingCurve(*input, *spec, *hardware->gpu, hardware->vm, std::max(8, input->nodes));
    std::optional<plan::Recommendation> rec;
    if (p.isSet("recommend"))
        rec = plan::recommend(*input, *spec, *catalog, *options);
    if (json) {
        nlohmann::json out = plan::planResultToJson(*input, *result);
        out["scaling"] = nlohmann::json::array();
        for (const plan::ScalingPoint& point : scaling)
            out["scaling"].push_back(
                {{"nodes", point.nodes}, {"tokens_per_second", point.tokensPerSecond},
                    {"efficiency", point.efficiency}, {"fits", point.fits}});
        if (rec) {
            const nlohmann::json r = plan::recommendationToJson(*rec);
            out["recommendations"] = r["options"];
            out["rejected"] = r["rejected"];
        }
        std::cout << out.dump(2) << "\n";
        return kExitOk;
    }
    std::cerr << notes.str();
    printPlan(std::cout, *input, *result, p.isSet("explain"));
    printScaling(std::cout, scaling);
    if (rec)
        printRecommendation(std::cout, *rec, *options, p.isSet("explain"), 15);
    if (!p.isSet("explain"))
        std::cout << "\n(--explain shows the formula and source of every figure"
                  << (rec ? "" : "; --recommend ranks Azure VM sizes") << ")\n";
    return kExitOk;
}

} // namespace tb::cli
