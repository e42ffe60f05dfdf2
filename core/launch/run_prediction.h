#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "metrics/run_history.h"
#include "plan/plan_input.h"

#include <string>

// The planner's estimate for a run config on the device it trains on: what
// a run records in its run_start ("prediction") and what the Compare page
// and `tunebench-cli compare` hold it against (docs/COMPARE.md). No Qt, no
// LibTorch.
namespace tb::launch {

// The GPU preset (presets/hardware/gpus.yaml) whose device_names hold what
// CUDA calls the run's GPU ("NVIDIA H100 80GB HBM3"); an error names the
// device and the file when no preset does.
common::Result<std::string> gpuPresetOfDevice(const std::string& cudaDeviceName);

// The estimate for `config` at `ranksPerNode` ranks on each of `nodes`
// machines (the plan input of run_plan.h's planInputOfRun) on `deviceId`:
// plan::kCpuDeviceId for this machine's CPU (plan::thisCpu()), else a GPU
// preset's id. Per rank: the peak at the step and in the other phases, as
// the run measures them (resident memory on the CPU, the caching
// allocator's allocated bytes on a GPU); tokens/s of the whole run and the
// optimizer step time. Errors name what the planner could not use (an
// unreadable config.json, an input it refuses, an unknown GPU).
// With a profile of the run's own rows (run_data_profile.h), the longest
// row sets the activation peak and the mean micro-batch the step time.
common::Result<metrics::RunPrediction> predictRun(const config::RunConfig& config, int ranksPerNode,
    int nodes, const std::string& deviceId, plan::DataProfile data = {});

} // namespace tb::launch
