// tunebench-cli compare: several runs side by side, scaling efficiency, and
// each run against the planner's prediction for it.
#include "arg_parser.h"
#include "commands.h"
#include "compare_report.h"

#include <filesystem>
#include <iostream>

namespace tb::cli {

int runCompare(const Args& args)
{
    ArgParser p("compare",
        "Compare runs from their folders: final loss, steady tokens/s, tokens/s per rank and the "
        "efficiency against the smallest run (1 rank against 2 and 4, say), step time, peak "
        "memory, and each run's measured figures against the planner's prediction recorded in "
        "its run_start.");
    p.addPositional("RUN_DIR...", "run folders (each holds an events.jsonl)");
    p.addFlag("json", "print JSON instead of tables");
    if (const std::optional<int> status = p.parseOrExitStatus(args))
        return *status;
    if (p.positionals().empty()) {
        std::cerr
            << "compare: expected one or more run folders (see tunebench-cli compare --help)\n";
        return kExitUsage;
    }
    std::vector<metrics::RunEntry> runs;
    for (const std::string& dir : p.positionals()) {
        const std::filesystem::path events = std::filesystem::path(dir) / metrics::kRank0EventsFile;
        std::error_code error;
        if (!std::filesystem::is_regular_file(events, error)) {
            std::cerr << "tunebench-cli compare: " << dir << ": not a run folder (no "
                      << metrics::kRank0EventsFile << ")\n";
            return kExitUsage;
        }
        runs.push_back(
            metrics::readRunEntry(std::filesystem::absolute(dir).lexically_normal().string()));
    }
    if (p.isSet("json"))
        printComparisonJson(std::cout, runs);
    else
        printComparison(std::cout, runs);
    return kExitOk;
}

} // namespace tb::cli
