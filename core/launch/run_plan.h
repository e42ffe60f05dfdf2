#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "plan/plan_input.h"

#include <string>

// A run folder against the planner: the plan input of the run's
// configuration (from rank 0's run_start) and what the run measured (its
// step events). Used by `tunebench-cli plan --calibrate` and by whatever
// compares runs with their plans. docs/PLANNER.md, "Calibration".
namespace tb::launch {

struct RunMeasurement {
    std::string runDir;
    std::string runId;
    plan::PlanInput input; // the plan of the run's configuration
    bool onCpu = true;
    int steps = 0; // step events read
    // metrics::steadyTokensPerSecond, as the runs list and Compare page show it.
    double tokensPerSecond = -1;
    // Largest over the steps; -1 when the run did not report it. On a GPU the
    // caching allocator's peaks, on the CPU the process's peak resident memory.
    double peakAllocatedBytes = -1;
    double peakReservedBytes = -1;
    double peakResidentBytes = -1;
};

// The plan input of a run config run by `worldSize` ranks on `nodes` nodes;
// gpuId names the device ("cpu" for a CPU run). Everything a plan needs that
// a run config does not say is the planner's description of Tunebench's
// trainer (AdamW, SDPA attention, chunked loss).
plan::PlanInput planInputOfRun(
    const config::RunConfig& config, int worldSize, int nodes, const std::string& gpuId);

// Reads <runDir>/events.jsonl. A CUDA run needs gpuId (its run_start names
// no GPU model); a CPU run plans on "cpu". modelOverride, when not empty,
// replaces the config's model folder (a run made on another machine).
common::Result<RunMeasurement> readRunMeasurement(
    const std::string& runDir, const std::string& gpuId, const std::string& modelOverride = {});

} // namespace tb::launch
