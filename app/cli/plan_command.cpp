#include "arg_parser.h"
#include "commands.h"
#include "plan_calibrate.h"
#include "plan_report.h"

#include "common/text.h"
#include "common/units.h"
#include "config/config_loader.h"
#include "launch/run_data_profile.h"
#include "launch/run_plan.h"
#include "plan/catalog.h"
#include "plan/cpu_device.h"
#include "plan/estimator.h"
#include "plan/plan_file.h"
#include "plan/plan_json.h"
#include "plan/plan_options.h"
#include "plan/recommender.h"
#include "plan/trainer_support.h"

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

std::string metavar(const plan::PlanOption& option)
{
    switch (plan::kindOf(option)) {
    case plan::OptionKind::Integer:
        return "N";
    case plan::OptionKind::Real:
        return "X";
    case plan::OptionKind::Choice:
        return names(plan::choiceNames(option));
    case plan::OptionKind::TextList:
        return "LIST";
    default:
        return "NAME";
    }
}

// Every option of the table that has a flag; a boolean gets --X and --no-X.
void addPlanOptions(ArgParser& p)
{
    const plan::PlanInput defaults;
    for (const plan::PlanOption& option : plan::planOptions()) {
        if (option.flag.empty())
            continue;
        const std::string flag(option.flag);
        const std::string fallback = plan::valueText(option, defaults);
        const std::string help =
            std::string(option.help) + (fallback.empty() ? "" : " (default " + fallback + ")");
        if (plan::kindOf(option) == plan::OptionKind::Boolean) {
            p.addFlag(flag, help);
            p.addFlag("no-" + flag, "the opposite of --" + flag);
        } else {
            p.addOption(flag, metavar(option), help);
        }
    }
}

ArgParser planParser()
{
    ArgParser p("plan",
        "Per-GPU memory, throughput, time and cost of a fine-tune, with the formula and source of\n"
        "every figure, and the Azure VM sizes that fit. With no options it plans the default:\n"
        "Llama-3.1-8B, LoRA r=16 on every linear layer, bf16 mixed, AdamW, micro-batch 4 x 2048\n"
        "tokens x 4 accumulation, on one Standard_NC24ads_A100_v4 (A100 80GB), 50,000 samples x\n"
        "1,000 tokens x 3 epochs (docs/PLANNER.md, Plan inputs).");
    addPlanOptions(p);
    p.addOption("plan", "FILE.yaml", "start from a saved plan");
    p.addOption("from-deepspeed", "FILE.json", "apply a DeepSpeed config");
    p.addOption("from-accelerate", "FILE.yaml", "apply an accelerate config");
    p.addOption("from-run", "RUN.yaml",
        "plan a Tunebench run config as our trainer runs it (model, method, LoRA, precision, "
        "sharding, offload, batch; engine tunebench; a CPU run plans on this CPU) on its own "
        "data, read and batched as the trainer does (the longest row sets the activations, "
        "the padded batches the time; epochs or max_steps the passes); plan options given "
        "beside it, such as --gpus-per-node for its ranks, override it");
    p.addFlag("nominal-data",
        "with --from-run: plan the dataset options (--dataset-samples, --mean-tokens, "
        "--dataset-tokens, --seq-len) instead of reading the run's data");
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
    p.addFlag("list-options",
        "print every plan option (file key, flag, accepted values, default) as Markdown and exit");
    return p;
}

// One option of the table, from --flag VALUE (or --flag / --no-flag).
Status readPlanOption(const ArgParser& p, const plan::PlanOption& option, plan::PlanInput& in)
{
    if (option.flag.empty())
        return common::Ok{};
    const std::string flag(option.flag);
    std::string text;
    if (plan::kindOf(option) == plan::OptionKind::Boolean) {
        if (p.isSet(flag) && p.isSet("no-" + flag))
            return Error{"plan: --" + flag + " and --no-" + flag + " contradict each other", {}};
        if (!p.isSet(flag) && !p.isSet("no-" + flag))
            return common::Ok{};
        text = p.isSet(flag) ? "true" : "false";
    } else if (p.isSet(flag)) {
        text = p.value(flag);
    } else {
        return common::Ok{};
    }
    if (const std::optional<std::string> refused = plan::assignText(option, in, text))
        return Error{"plan: --" + flag + ": " + *refused, {}};
    return common::Ok{};
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

// --from-run: the run's own rows batched over the plan's ranks, unless
// --nominal-data keeps the dataset options.
Status profileRunData(
    const ArgParser& p, const plan::Catalog& catalog, plan::PlanInput& in, std::ostream& notes)
{
    if (p.isSet("nominal-data") && !p.isSet("from-run"))
        return Error{"plan: --nominal-data applies to --from-run only", {}};
    if (!p.isSet("from-run") || p.isSet("nominal-data"))
        return common::Ok{};
    for (const char* nominal : {"dataset-samples", "mean-tokens", "dataset-tokens"})
        if (p.isSet(nominal))
            return Error{"plan: --" + std::string(nominal)
                    + " with --from-run: the run's data is read and planned instead",
                "add --nominal-data to plan the dataset options"};
    common::Result<config::RunConfig> loaded = config::loadRunConfig(p.value("from-run"));
    if (!loaded)
        return loaded.error();
    // Batch options given beside the run config batch its data too.
    config::RunConfig& run = loaded.value();
    run.data.sequenceLength = in.seqLen;
    run.data.packing = in.packing;
    run.training.microBatch = in.microBatch;
    run.training.gradAccum = in.gradAccum;
    const plan::VmSize* vm = in.vmSize.empty() ? nullptr : catalog.findVm(in.vmSize);
    const int ranksPerNode = in.gpusPerNode > 0 ? in.gpusPerNode : vm ? vm->gpusPerVm : 1;
    common::Result<plan::DataProfile> profile =
        launch::profileRunData(run, ranksPerNode * std::max(1, in.nodes));
    if (!profile)
        return profile.error();
    const double epochs = in.epochs;
    launch::applyDataProfile(in, run, std::move(profile.value()));
    if (p.isSet("epochs"))
        in.epochs = epochs;
    const plan::DataProfile& d = in.data;
    notes << "data: " << d.source << ": " << common::formatCount(double(d.rows)) << " rows, "
          << common::formatCount(double(d.tokens)) << " tokens ("
          << common::formatCount(double(d.batchTokens - d.tokens)) << " padding) in "
          << d.microBatches << " micro-batches per epoch, the longest row " << d.longestRow
          << " of " << in.seqLen << " tokens\n";
    return plan::validatePlanInput(in);
}

common::Result<plan::PlanInput> buildInput(const ArgParser& p, std::ostream& notes)
{
    plan::PlanInput in;
    if (p.isSet("plan")) {
        common::Result<plan::PlanInput> loaded = plan::loadPlanYaml(p.value("plan"));
        if (!loaded)
            return loaded.error();
        in = *loaded;
    }
    if (p.isSet("from-run")) {
        // The data is profiled below, with the batch options given beside it.
        common::Result<plan::PlanInput> run =
            launch::planInputOfRunFile(p.value("from-run"), in, false);
        if (!run)
            return run.error();
        in = *run;
        notes << "from " << p.value("from-run") << ": " << in.model << ", engine tunebench\n";
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
    // A VM size sets the GPU and all of its GPUs unless --gpus-per-node says
    // otherwise; a GPU alone plans without a VM.
    if (p.isSet("vm")) {
        in.gpu.clear();
        in.gpusPerNode = 0;
    } else if (p.isSet("gpu")) {
        in.vmSize.clear();
    }
    for (const plan::PlanOption& option : plan::planOptions())
        TB_TRY(readPlanOption(p, option, in));
    if (Status valid = plan::validatePlanInput(in); !valid)
        return valid.error();
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
    ArgParser p = planParser();
    if (Status parsed = p.parse(args); !parsed)
        return fail(parsed.error());
    if (p.helpRequested()) {
        std::cout << p.helpText();
        return kExitOk;
    }
    if (p.isSet("list-options")) {
        std::cout << plan::optionTableMarkdown();
        return kExitOk;
    }
    common::Result<plan::Catalog> catalog =
        p.isSet("presets") ? plan::Catalog::load(p.value("presets")) : plan::Catalog::loadDefault();
    if (!catalog)
        return fail(catalog.error());
    if (p.isSet("list-models")) {
        // The same family list the trainer refuses a model by.
        for (const model::ModelSpec& m : catalog->models()) {
            const plan::TrainerSupport trainer = plan::tunebenchTrainerSupport(m);
            std::cout << m.name << "  (" << m.hfRepoId << ")"
                      << (trainer.runs ? "" : "  [not Tunebench's trainer: " + trainer.reason + "]")
                      << "\n";
        }
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
    if (Status profiled = profileRunData(p, *catalog, input.value(), notes); !profiled)
        return fail(profiled.error());
    // What the user asked for, before any calibration and whatever the plan
    // then finds.
    if (p.isSet("save-plan")) {
        if (Status saved = plan::savePlanYaml(p.value("save-plan"), *input); !saved)
            return fail(saved.error());
    }
    if (Status calibrated = applyCalibrationFile(p, *catalog, input.value()); !calibrated)
        return fail(calibrated.error());
    common::Result<plan::RecommendOptions> options = recommendOptions(p);
    if (!options)
        return fail(options.error());
    const plan::EstimateOptions estimate{true};
    common::Result<plan::PlanResult> result = plan::planFromCatalog(*input, *catalog, estimate);
    if (!result)
        return fail(result.error());
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
