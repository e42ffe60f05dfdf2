#include "arg_parser.h"
#include "commands.h"

#include "common/units.h"
#include "config/config_loader.h"
#include "train/trainer.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <signal.h>

namespace tb::cli {

namespace {

std::atomic<bool> g_stopRequested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

// First SIGINT/SIGTERM: stop at the next step boundary with a checkpoint.
// A second one: the default action (end now), for a user who means it.
void onTrainStopSignal(int signal)
{
    if (g_stopRequested.exchange(true)) {
        std::signal(signal, SIG_DFL);
        std::raise(signal);
    }
}

void installStopHandlers()
{
    struct sigaction action = {};
    action.sa_handler = onTrainStopSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

std::string scientific(double value)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.2e", value);
    return text;
}

void printProgress(const train::TrainerProgress& item, long long logEvery)
{
    using Kind = train::TrainerProgress::Kind;
    switch (item.kind) {
    case Kind::Setup:
        std::cerr << "setup   " << item.message << "\n";
        break;
    case Kind::Step:
        if (item.step % logEvery != 0 && item.step != item.totalSteps)
            break;
        std::cerr << "step    " << item.step << "/" << item.totalSteps << "  loss "
                  << common::formatFixed(item.loss, 4) << "  lr " << scientific(item.learningRate)
                  << "  grad " << common::formatFixed(item.gradNorm, 3) << "  "
                  << common::formatRate(item.tokensPerSecond, "tok") << "  "
                  << common::formatFixed(item.stepSeconds, 2) << " s/step"
                  << (item.residentBytes >= 0 ? "  RSS "
                                 + common::formatBytes(static_cast<double>(item.residentBytes))
                                              : std::string())
                  << "  ETA " << common::formatDuration(item.etaSeconds) << "\n";
        break;
    case Kind::Eval:
        // A DPO run's sentence gives its pair figures; a perplexity of the
        // pair loss would mean nothing.
        if (!item.message.empty())
            std::cerr << "eval    step " << item.step << "  " << item.message << "\n";
        else
            std::cerr << "eval    step " << item.step << "  validation loss "
                      << common::formatFixed(item.loss, 4) << " (perplexity "
                      << common::formatFixed(std::exp(item.loss), 3) << ")\n";
        break;
    case Kind::Checkpoint:
        std::cerr << "saved   " << item.message << "\n";
        break;
    case Kind::Export:
        std::cerr << "export  " << item.message << "\n";
        break;
    case Kind::Warning:
        std::cerr << "warning " << item.message << "\n";
        break;
    }
}

} // namespace

int runTrain(const Args& args)
{
    ArgParser parser("train",
        "Fine-tune a model as a run config says (docs/RUN_CONFIG.md, docs/TRAINING.md). The run "
        "folder (output.dir) receives config.yaml, events.jsonl, checkpoints/ and the exports. "
        "SIGINT or SIGTERM stops at the next step with a checkpoint; --resume continues.");
    parser.addPositional("config", "run config (YAML)");
    parser.addFlag("resume", "continue from the newest checkpoint in the run folder");
    parser.addOption("resume-from", "DIR", "continue from this checkpoint folder");
    parser.addOption(
        "init-adapter", "DIR", "start LoRA from this PEFT adapter (same rank and targets)");
    parser.addOption("output", "DIR", "run folder instead of output.dir");
    parser.addOption("max-steps", "N", "optimizer steps instead of training.max_steps / epochs");
    parser.addOption("threads", "N",
        "compute threads (default: OMP_NUM_THREADS when set, else the usable cores divided "
        "by the ranks on this machine)");
    parser.addOption("device", "cpu|cuda|auto", "device instead of the run config's device");
    parser.addFlag("export-only",
        "with --resume or --resume-from: write the adapter / merged weights of that "
        "checkpoint (sharded or not, at any number of ranks) and stop");
    parser.addFlag("quiet", "no progress lines, only the summary");
    if (const std::optional<int> status = parser.parseOrExitStatus(args))
        return *status;
    if (parser.positionals().size() != 1) {
        std::cerr << "tunebench-cli train: expected one run config\n\n" << parser.helpText();
        return kExitUsage;
    }
    const auto threads = parser.integer("threads", 0, 1, 1024);
    const auto maxSteps = parser.integer("max-steps", 0, 1, 1LL << 40);
    if (!threads || (parser.isSet("max-steps") && !maxSteps)) {
        std::cerr << "tunebench-cli train: "
                  << (!threads ? threads.error() : maxSteps.error()).toString() << "\n";
        return kExitUsage;
    }

    const std::string path = parser.positionals().front();
    config::LoadOptions loadOptions;
    loadOptions.checkPaths = true;
    const config::LoadReport report = config::readRunConfigFile(path, loadOptions);
    for (const config::ConfigProblem& warning : report.warnings.items())
        std::cerr << "warning: " << warning.toString(report.sourceName) << "\n";
    if (!report.ok()) {
        std::cerr << "tunebench-cli train: " << report.error().toString() << "\n";
        return kExitUsage;
    }
    config::RunConfig config = *report.config;
    if (parser.isSet("output"))
        config.output.dir = std::filesystem::absolute(parser.value("output")).lexically_normal();
    if (parser.isSet("max-steps"))
        config.training.maxSteps = *maxSteps;
    if (parser.isSet("device")) {
        const auto device = config::fromString<config::Device>(parser.value("device"));
        if (!device) {
            std::cerr << "tunebench-cli train: --device: got '" << parser.value("device")
                      << "', expected cpu, cuda or auto\n";
            return kExitUsage;
        }
        config.device = *device;
    }
    if (config.method == config::Method::Full && !parser.value("init-adapter").empty()) {
        std::cerr << "tunebench-cli train: --init-adapter needs method lora or qlora\n";
        return kExitUsage;
    }

    train::TrainerOptions options;
    options.resume = parser.isSet("resume");
    options.resumeFrom = parser.value("resume-from");
    options.initAdapter = parser.value("init-adapter");
    options.exportOnly = parser.isSet("export-only");
    options.threads = static_cast<int>(*threads);
    options.stopRequested = &g_stopRequested;
    if (!parser.isSet("quiet")) {
        const long long logEvery = std::max<long long>(1, config.training.logEvery);
        options.progress = [logEvery](const train::TrainerProgress& item) {
            printProgress(item, logEvery);
        };
    }
    installStopHandlers();
    const auto outcome = train::runTraining(config, options);
    if (!outcome) {
        std::cerr << "tunebench-cli train: " << outcome.error().toString() << "\n";
        return kExitUsage;
    }
    // The launcher quotes a failed rank's last stderr line: make it the reason.
    if (outcome->status == train::RunStatus::Failed)
        std::cerr << "tunebench-cli train: run failed: " << outcome->message << "\n";
    std::cout << "run         " << config.name << " (" << config::toString(config.method) << ", "
              << config::toString(config.precision) << ")\n"
              << "status      " << train::runStatusName(outcome->status)
              << (outcome->message.empty() ? "" : ": " + outcome->message) << "\n"
              << "steps       " << outcome->steps << " of " << outcome->totalSteps << " in "
              << common::formatDuration(outcome->seconds) << "\n"
              << "train loss  " << common::formatFixed(outcome->lastLoss, 4) << " (last step)\n";
    if (outcome->firstEvalLoss || outcome->lastEvalLoss)
        std::cout << "eval loss   "
                  << (outcome->firstEvalLoss
                             ? common::formatFixed(*outcome->firstEvalLoss, 4) + " before, "
                             : std::string())
                  << (outcome->lastEvalLoss
                             ? common::formatFixed(*outcome->lastEvalLoss, 4) + " last"
                             : std::string())
                  << "\n";
    std::cout << "run folder  " << outcome->runDir << "\n";
    if (!outcome->lastCheckpoint.empty())
        std::cout << "checkpoint  " << outcome->lastCheckpoint << "\n";
    if (!outcome->adapterDir.empty())
        std::cout << "adapter     " << outcome->adapterDir << "\n";
    if (!outcome->mergedDir.empty())
        std::cout << "merged      " << outcome->mergedDir << "\n";
    return outcome->status == train::RunStatus::Failed ? kExitFailure : kExitOk;
}

} // namespace tb::cli
