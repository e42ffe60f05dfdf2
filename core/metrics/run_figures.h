#pragma once

#include "metrics/step_record.h"

#include <cstdint>
#include <vector>

// The one definition of a run's headline figures from its step events:
// steady throughput, step time and peak memory. The runs list, the Compare
// and Runs pages, `tunebench-cli runs` and `compare`, and calibration
// against the planner (launch/run_plan) all read them here, so a run shows
// the same tokens/s wherever it appears.
namespace tb::metrics {

// Tokens a step trained on: its own count, else its rate times its time.
double stepTokens(const StepRecord& step);

// Tokens per second over the steps after the first (which includes warm-up:
// allocations, the first collective): their tokens over their seconds, so
// that the figure times a run as a clock would (a median of per-step rates
// would hide the slow steps a run really waits through). With one step,
// that step's rate; -1 when the run reported neither.
double steadyTokensPerSecond(const std::vector<StepRecord>& steps);
// Mean step_seconds over the same steps; -1 when unknown.
double steadyStepSeconds(const std::vector<StepRecord>& steps);

// The highest mem_peak_bytes (the allocator's peak on a GPU, the process's
// peak resident memory on the CPU) and mem_peak_reserved_bytes (GPU only);
// -1 when no step reported it.
int64_t peakBytes(const std::vector<StepRecord>& steps);
int64_t peakReservedBytes(const std::vector<StepRecord>& steps);

} // namespace tb::metrics
