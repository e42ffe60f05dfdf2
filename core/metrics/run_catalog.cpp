#include "metrics/run_catalog.h"

#include "common/local_machine.h"
#include "metrics/followed_run.h"
#include "metrics/run_compare.h"
#include "metrics/run_control.h"

#include <algorithm>
#include <filesystem>
#include <regex>

namespace tb::metrics {

namespace fs = std::filesystem;

namespace {

void findIn(const fs::path& dir, int depthLeft, std::vector<std::string>& found)
{
    std::error_code error;
    if (fs::is_regular_file(dir / kRank0EventsFile, error))
        found.push_back(dir.string());
    if (depthLeft <= 0)
        return;
    for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, error), end;
         !error && it != end; it.increment(error)) {
        // Checkpoints and exports hold weights, never a run's events.
        const std::string name = it->path().filename().string();
        if (it->is_directory(error) && !it->is_symlink(error) && name != "checkpoints"
            && name != "export" && name.front() != '.')
            findIn(it->path(), depthLeft - 1, found);
    }
}

double lastEventSeconds(const RunHistory& history)
{
    double last = history.start() ? history.start()->timeSeconds : 0;
    if (!history.steps().empty())
        last = std::max(last, history.steps().back().timeSeconds);
    if (!history.evals().empty())
        last = std::max(last, history.evals().back().timeSeconds);
    return last;
}

} // namespace

common::Result<RunHistory> readRunHistory(const std::string& eventsPath)
{
    FollowedRun run(eventsPath);
    if (common::Result<bool> read = run.poll(); !read)
        return read.error();
    return run.history();
}

std::vector<std::string> findRunFolders(const std::string& root, int maxDepth)
{
    std::vector<std::string> found;
    std::error_code error;
    const fs::path absolute = fs::absolute(root, error);
    if (!error && fs::is_directory(absolute, error))
        findIn(absolute.lexically_normal(), maxDepth, found);
    std::sort(found.begin(), found.end());
    return found;
}

std::vector<std::pair<int, std::string>> rankEventFiles(const std::string& dir)
{
    static const std::regex kRankFile(R"(events\.rank([0-9]{1,6})\.jsonl)");
    std::vector<std::pair<int, std::string>> files;
    std::error_code error;
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
        std::smatch match;
        const std::string name = it->path().filename().string();
        if (std::regex_match(name, match, kRankFile))
            files.emplace_back(std::stoi(match[1].str()), it->path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::string runState(const RunHistory& history)
{
    if (history.end())
        return history.end()->status;
    const std::optional<RunStartInfo>& start = history.start();
    if (start && start->pid > 0 && start->host == common::hostName()
        && !isTrainerCommand(common::processCommandLine(start->pid)))
        return "lost";
    return "running";
}

RunEntry summariseRun(const std::string& dir, const RunHistory& history)
{
    RunEntry entry;
    entry.dir = dir;
    entry.name = fs::path(dir).filename().string();
    if (!history.start()) {
        entry.problem = "no run_start in " + (fs::path(dir) / kRank0EventsFile).string();
        return entry;
    }
    const RunStartInfo& start = *history.start();
    if (!start.runId.empty())
        entry.name = start.runId;
    entry.modelName = start.modelName;
    entry.method = start.method;
    entry.worldSize = start.worldSize;
    entry.nodes = start.nodes;
    entry.state = runState(history);
    entry.steps = history.lastStep();
    entry.totalSteps = start.totalSteps;
    if (!history.steps().empty())
        entry.lastLoss = history.steps().back().loss;
    entry.tokensPerSecond = steadyTokensPerSecond(history.steps());
    entry.stepSeconds = steadyStepSeconds(history.steps());
    entry.peakBytes = peakBytes(history.steps());
    entry.loadPeakBytes = start.loadPeakBytes;
    entry.exportPeakBytes = history.exportPeakBytes();
    entry.startSeconds = start.timeSeconds;
    const double end = history.end() ? history.end()->timeSeconds : lastEventSeconds(history);
    entry.durationSeconds = std::max(0.0, end - start.timeSeconds);
    entry.prediction = start.prediction;
    return entry;
}

RunEntry readRunEntry(const std::string& dir)
{
    common::Result<RunHistory> history =
        readRunHistory((fs::path(dir) / kRank0EventsFile).string());
    if (!history) {
        RunEntry entry;
        entry.dir = dir;
        entry.name = fs::path(dir).filename().string();
        entry.problem = history.error().toString();
        return entry;
    }
    return summariseRun(dir, *history);
}

std::vector<RunEntry> scanRuns(const std::string& root)
{
    std::vector<RunEntry> entries;
    for (const std::string& dir : findRunFolders(root))
        entries.push_back(readRunEntry(dir));
    return entries;
}

} // namespace tb::metrics
