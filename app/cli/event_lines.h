#pragma once

#include "metrics/event.h"
#include "metrics/run_history.h"

namespace tb::cli {

// One line on stdout per event worth a line (a step with its loss, rate and
// peak; evaluations, checkpoints, warnings, errors, the start and the end),
// as `monitor` and `launch --hostfile` follow a run.
void printEvent(const metrics::Event& event, const metrics::RunHistory& history);

} // namespace tb::cli
