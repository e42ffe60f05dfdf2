#include "commands.h"

#include <iostream>

// Subcommands whose feature has not been built yet. Each says so plainly,
// with the issue that builds it, and exits with the usage status so scripts
// never mistake it for a run that happened.
namespace tb::cli {

namespace {

int notBuilt(const char* name, const char* summary, const char* issue, const Args& args)
{
    const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h");
    (help ? std::cout : std::cerr)
        << "usage: tunebench-cli " << name << " ...\n\n"
        << summary << "\n\n"
        << "Not built yet: this command arrives with " << issue << ".\n";
    return kExitUsage;
}

} // namespace

int runMonitor(const Args& args)
{
    return notBuilt("monitor", "Follow a run's event stream, locally or over SSH.",
                    "the monitor issue", args);
}

} // namespace tb::cli
