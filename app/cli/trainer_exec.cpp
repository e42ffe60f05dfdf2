#include "commands.h"

#include "common/build_info.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <unistd.h>

// train, eval and generate run in tunebench-trainer, the one executable that
// loads LibTorch; tunebench-cli replaces itself with it (same pid, signals,
// standard streams), so plan, export or monitor never load LibTorch.
namespace tb::cli {

namespace {

std::filesystem::path trainerBesideThisProgram()
{
    std::error_code error;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error)
        return {};
    return self.parent_path() / common::buildinfo::kTrainerExecutable;
}

// Without the trainer the command still answers --help (on stdout), with
// the reason it cannot run here.
int trainerMissing(const char* command, const std::filesystem::path& trainer, const Args& args)
{
    const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h");
    (help ? std::cout : std::cerr)
        << "usage: tunebench-cli " << command << " ...\n\n"
        << "Not in this build: " << command << " runs in "
        << (trainer.empty() ? std::string(common::buildinfo::kTrainerExecutable) : trainer.string())
        << ", which is not there"
        << (common::buildinfo::kHasTrainer
                   ? " (install it beside tunebench-cli).\n"
                   : ": this build has no trainer (configure with -DTUNEBENCH_TRAINER=ON).\n");
    return kExitUsage;
}

int execTrainer(const char* command, const Args& args)
{
    const std::filesystem::path trainer = trainerBesideThisProgram();
    if (trainer.empty() || ::access(trainer.c_str(), X_OK) != 0)
        return trainerMissing(command, trainer, args);
    std::vector<std::string> words{trainer.string(), command};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& word : words)
        argv.push_back(word.data());
    argv.push_back(nullptr);
    ::execv(trainer.c_str(), argv.data());
    std::cerr << "tunebench-cli " << command << ": could not start " << trainer.string() << ": "
              << std::strerror(errno) << "\n";
    return kExitUsage;
}

} // namespace

int runTrain(const Args& args)
{
    return execTrainer("train", args);
}

int runEval(const Args& args)
{
    return execTrainer("eval", args);
}

int runGenerate(const Args& args)
{
    return execTrainer("generate", args);
}

} // namespace tb::cli
