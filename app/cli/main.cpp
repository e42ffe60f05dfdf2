#include "commands.h"

#include "common/build_id.h"
#include "common/build_info.h"

#include <cstdio>
#include <cstring>
#include <iostream>

namespace {

struct Subcommand {
    const char* name;
    const char* summary;
    int (*run)(const tb::cli::Args&);
};

constexpr Subcommand kSubcommands[] = {
    {"plan", "per-GPU memory, throughput, time and cost of a fine-tune; Azure VM recommendations",
        tb::cli::runPlan},
    {"train", "fine-tune a model from a run config (one process or one rank)", tb::cli::runTrain},
    {"launch", "start N local ranks of a run, like torchrun --nproc_per_node", tb::cli::runLaunch},
    {"monitor", "follow a run's event stream, locally or over SSH; stop it", tb::cli::runMonitor},
    {"runs", "list the runs under a folder: model, method, ranks, state, loss, tokens/s",
        tb::cli::runRuns},
    {"compare", "compare runs: loss, tokens/s, scaling efficiency, measured against predicted",
        tb::cli::runCompare},
    {"scaling", "scaling probe: a recipe at 1, 2, 4... ranks for K steps, then compared",
        tb::cli::runScaling},
    {"export", "write a plan as a torchrun, accelerate, Azure ML or Slurm job", tb::cli::runExport},
    {"tokenize", "print token ids of stdin, or count the tokens of a dataset",
        tb::cli::runTokenize},
    {"eval", "mean loss and perplexity of a model on a text file", tb::cli::runEval},
    {"generate", "continue a prompt with a model (greedy or sampled)", tb::cli::runGenerate},
    {"fetch", "copy a run's adapter or merged export back over SFTP, checksum verified",
        tb::cli::runFetch},
    {"node-check", "what a multi-node launch asks of each node over SSH (JSON)",
        tb::cli::runNodeCheck},
};

void printUsage(std::FILE* out)
{
    std::fprintf(out,
        "usage: tunebench-cli <command> [options]\n\n"
        "Plan and run fine-tunes of large language models.\n\ncommands:\n");
    for (const Subcommand& sub : kSubcommands)
        std::fprintf(out, "  %-10s %s\n", sub.name, sub.summary);
    std::fprintf(out, "\n'tunebench-cli <command> --help' describes a command.\n");
}

void printVersion()
{
    using namespace tb::common::buildinfo;
    std::printf("tunebench-cli %s\n", kTunebenchVersion);
    std::printf("  build id     %s\n", tb::common::executableBuildId().c_str());
    std::printf("  compiler     %s\n", kCompiler);
    std::printf("  trainer      %s\n", kHasTrainer ? kLibTorchVersion : "not built");
    std::printf("  yaml-cpp     %s\n", kYamlCppVersion);
    std::printf("  nlohmann     %s\n", kNlohmannJsonVersion);
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        printUsage(argc < 2 ? stderr : stdout);
        return argc < 2 ? tb::cli::kExitUsage : tb::cli::kExitOk;
    }
    if (std::strcmp(argv[1], "--version") == 0) {
        printVersion();
        return tb::cli::kExitOk;
    }
    const tb::cli::Args args(argv + 2, argv + argc);
    for (const Subcommand& sub : kSubcommands) {
        if (std::strcmp(argv[1], sub.name) == 0) {
            try {
                return sub.run(args);
            } catch (const std::exception& e) {
                // Core APIs return errors; this is the last line against a bug.
                std::cerr << "tunebench-cli " << sub.name << ": internal error: " << e.what()
                          << "\n";
                return tb::cli::kExitFailure;
            }
        }
    }
    std::fprintf(stderr, "tunebench-cli: unknown command '%s'\n\n", argv[1]);
    printUsage(stderr);
    return tb::cli::kExitUsage;
}
