#pragma once

#include "metrics/run_history.h"

#include <QString>

namespace tb::ui {

// Stopping a run that this window did not start (a run folder opened, a
// run started from a terminal): rank 0's run_start names its host and pid.
// A run is stoppable from here when it has not ended, runs on this machine,
// and that pid is still a tunebench trainer (not a reused pid). SIGTERM is
// what the trainer takes as a graceful stop: it checkpoints, the other
// ranks agree at the step boundary, and run_end says "stopped".

// Empty when stopLocalRun() would signal the run; otherwise why not.
QString whyNotStoppable(const metrics::RunHistory& history);

// Sends SIGTERM to rank 0's trainer. Empty on success, else why not.
QString stopLocalRun(const metrics::RunHistory& history);

} // namespace tb::ui
