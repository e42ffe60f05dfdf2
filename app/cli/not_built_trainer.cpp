#include "commands.h"

#include <iostream>

// eval, generate and train need the LibTorch trainer (core/train). In a build
// without it (the planner preset) they say so instead of pretending.
namespace tb::cli {

namespace {

int needsTrainer(const char* name, const char* summary, const Args& args)
{
    const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h");
    (help ? std::cout : std::cerr) << "usage: tunebench-cli " << name << " ...\n\n"
                                   << summary << "\n\n"
                                   << "Not in this build: it needs the LibTorch trainer "
                                      "(configure with -DTUNEBENCH_TRAINER=ON).\n";
    return kExitUsage;
}

} // namespace

int runEval(const Args& args)
{
    return needsTrainer("eval", "Mean loss and perplexity of a model on a text file.", args);
}

int runGenerate(const Args& args)
{
    return needsTrainer("generate", "Continue a prompt with a model.", args);
}

int runTrain(const Args& args)
{
    return needsTrainer("train", "Fine-tune a model from a run config.", args);
}

} // namespace tb::cli
