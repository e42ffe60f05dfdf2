// tunebench-cli runs: the runs under a folder, one line each.
#include "arg_parser.h"
#include "commands.h"
#include "compare_report.h"

#include <filesystem>
#include <iostream>

namespace tb::cli {

int runRuns(const Args& args)
{
    ArgParser p("runs",
        "List the runs under a folder: every folder (up to four levels down) holding an "
        "events.jsonl, summarised from its events: name, model, method, ranks, state, steps, "
        "last loss, steady tokens/s, start and duration.");
    p.addPositional("DIR", "where to look (default: the current folder)");
    if (const std::optional<int> status = p.parseOrExitStatus(args))
        return *status;
    if (p.positionals().size() > 1) {
        std::cerr << "runs: expected at most one folder, got " << p.positionals().size()
                  << " arguments (see tunebench-cli runs --help)\n";
        return kExitUsage;
    }
    const std::string root = p.positionals().empty() ? "." : p.positionals()[0];
    std::error_code error;
    if (!std::filesystem::is_directory(root, error)) {
        std::cerr << "tunebench-cli runs: " << root << ": not a folder\n";
        return kExitUsage;
    }
    const std::vector<metrics::RunEntry> runs = metrics::scanRuns(root);
    if (runs.empty()) {
        std::cout << "no runs under " << root << " (no folder with an events.jsonl)\n";
        return kExitOk;
    }
    printRunsTable(std::cout, runs);
    return kExitOk;
}

} // namespace tb::cli
