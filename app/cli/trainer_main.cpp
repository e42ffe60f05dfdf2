#include "commands.h"

#include <cstdio>
#include <cstring>
#include <iostream>

// tunebench-trainer: the subcommands that load LibTorch. Users call them as
// `tunebench-cli train|eval|generate`, which execs this program.
namespace {

struct TrainerCommand {
    const char* name;
    int (*run)(const tb::cli::Args&);
};

constexpr TrainerCommand kCommands[] = {
    {"train", tb::cli::runTrain},
    {"eval", tb::cli::runEval},
    {"generate", tb::cli::runGenerate},
};

} // namespace

int main(int argc, char** argv)
{
    if (argc >= 2) {
        const tb::cli::Args args(argv + 2, argv + argc);
        for (const TrainerCommand& command : kCommands) {
            if (std::strcmp(argv[1], command.name) != 0)
                continue;
            try {
                return command.run(args);
            } catch (const std::exception& e) {
                std::cerr << "tunebench-cli " << command.name << ": internal error: " << e.what()
                          << "\n";
                return tb::cli::kExitFailure;
            }
        }
    }
    std::fprintf(stderr,
        "usage: tunebench-trainer train|eval|generate [options]\n"
        "(started by tunebench-cli; see 'tunebench-cli --help')\n");
    return tb::cli::kExitUsage;
}
