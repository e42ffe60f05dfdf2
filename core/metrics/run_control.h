#pragma once

#include "common/error.h"
#include "metrics/run_history.h"

#include <functional>
#include <string>

namespace tb::metrics {

// Whether a followed run can be asked to stop gracefully: SIGTERM to rank
// 0's trainer, which checkpoints; the other ranks agree at the step
// boundary and run_end says "stopped". Rank 0's run_start names its host
// and pid. Ok(pid) when the run has not ended, `hostName` (the machine the
// caller can signal on) is that host, and `commandLineOf(pid)` (that
// machine's /proc/<pid>/cmdline, arguments joined by spaces; empty when no
// such process) is still `tunebench-trainer train ...`, not a reused pid.
// Otherwise an Error that says why not.
common::Result<long long> stoppableTrainer(const RunHistory& history, const std::string& hostName,
    const std::function<std::string(long long pid)>& commandLineOf);

// Whether a process's command line (arguments joined by spaces) is our
// trainer training: what tells a run's pid from a reused one, for Stop and
// for the runs list's "lost".
bool isTrainerCommand(const std::string& commandLine);

// stoppableTrainer() here, then SIGTERM to it. Ok(pid) when sent.
common::Result<long long> stopLocalTrainer(const RunHistory& history);

} // namespace tb::metrics
