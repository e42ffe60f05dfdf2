#pragma once

#include "common/error.h"
#include "metrics/run_history.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

// The runs under a folder, each summarised from its event stream, for the
// runs list (Compare page, `tunebench-cli runs`).
namespace tb::metrics {

inline constexpr const char* kRank0EventsFile = "events.jsonl";

// One run folder as the runs list shows it.
struct RunEntry {
    std::string dir; // absolute
    std::string name; // run_id, else the folder's name
    std::string modelName;
    std::string method;
    int worldSize = 0;
    int nodes = 0;
    std::string state; // completed, stopped, failed, running, lost (ended without run_end)
    int64_t steps = 0;
    int64_t totalSteps = -1;
    double lastLoss = std::nan("");
    double tokensPerSecond = -1; // steady rate: steadyTokensPerSecond()
    double stepSeconds = -1; // mean, steps after the first
    int64_t peakBytes = -1; // rank 0's highest mem_peak_bytes
    int64_t loadPeakBytes = -1; // rank 0's peak while setting up (run_start.load)
    int64_t exportPeakBytes = -1; // rank 0's peak while exporting
    double startSeconds = 0; // Unix time of the first run_start
    double durationSeconds = -1; // to run_end, else to the last event read
    std::optional<RunPrediction> prediction;
    std::string problem; // why the folder could not be read; the rest is then empty
};

// Reads a whole event file (every line written so far) into a history.
common::Result<RunHistory> readRunHistory(const std::string& eventsPath);

// Folders under `root` (itself included) that hold an events.jsonl, at
// most `maxDepth` levels down, sorted. A checkpoint folder is not entered.
std::vector<std::string> findRunFolders(const std::string& root, int maxDepth = 4);

// The other ranks' streams of a run folder, events.rank<N>.jsonl, by rank.
std::vector<std::pair<int, std::string>> rankEventFiles(const std::string& dir);

// completed, stopped or failed from run_end; without one, "running" unless
// its trainer is known to be gone from this machine ("lost").
std::string runState(const RunHistory& history);

RunEntry summariseRun(const std::string& dir, const RunHistory& history);
// readRunHistory() and summariseRun(); a read error becomes `problem`.
RunEntry readRunEntry(const std::string& dir);
std::vector<RunEntry> scanRuns(const std::string& root);

} // namespace tb::metrics
