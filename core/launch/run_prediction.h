#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "metrics/run_history.h"

// The planner's estimate for a run config on this machine's CPU: what a run
// records in its run_start ("prediction") and what the Compare page and
// `tunebench-cli compare` hold it against (docs/COMPARE.md). No Qt, no
// LibTorch.
namespace tb::launch {

// The estimate for `config` at `ranksPerNode` ranks on each of `nodes`
// machines (the plan input of run_plan.h's planInputOfRun, on
// plan::thisCpu()): the process's peak resident memory per rank (the
// planner's device_used), tokens/s of the whole run and the optimizer step
// time. Errors name what the planner could not use (an unreadable
// config.json, an input it refuses).
common::Result<metrics::RunPrediction> predictCpuRun(
    const config::RunConfig& config, int ranksPerNode, int nodes);

} // namespace tb::launch
