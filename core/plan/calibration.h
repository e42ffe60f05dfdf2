#pragma once

#include "common/error.h"
#include "plan/plan_input.h"
#include "plan/plan_result.h"

#include <string>
#include <vector>

// Calibration from measured runs: per device (GPU id, or "cpu"), the
// utilisation and the allocator's reserve that make the plans of those runs
// match what they measured, with the runs they came from. Later plans on
// that device apply them and say so ("calibrated by 3 runs on H100-SXM").
// docs/PLANNER.md, "Calibration from our own runs".
namespace tb::plan {

// One run against the plan of its configuration.
struct CalibrationRun {
    std::string runDir;
    std::string runId;
    double plannedTokensPerSecond = 0;
    double measuredTokensPerSecond = 0;
    double plannedUtilisation = 0; // what the plan assumed
    PeakLevel peak = PeakLevel::Device; // which peak the run measured
    double plannedPeakBytes = 0;
    double measuredPeakBytes = -1; // -1: not measured
    double plannedAllocatedBytes = 0; // what the plan puts in tensors (peak_allocated)
    double plannedTransientBytes = 0; // activations, logits, buffers: what the reserve scales with
    double measuredReserveBytes = -1; // GPU: peak reserved - peak allocated; -1: unknown
};

struct DeviceCalibration {
    std::string gpuId;
    double utilisation = 0; // 0: not calibrated
    double allocatorOverhead = 0; // fraction of the transients; 0: not calibrated
    // Memory beyond the tensors that device_used shows (a CPU run: the
    // process and LibTorch); 0: not calibrated.
    double runtimeBytes = 0;
    std::vector<CalibrationRun> runs;

    std::string note() const; // "calibrated by 3 runs on H100-SXM"
};

struct Calibration {
    std::vector<DeviceCalibration> devices;

    const DeviceCalibration* find(const std::string& gpuId) const;
    // Replaces the device's entry (a new calibration supersedes the old one).
    void set(DeviceCalibration device);
};

// The device's figures from its runs: utilisation scaled by measured over
// planned tokens/s (median over the runs), the allocator's reserve as the
// median of measured reserve over planned transients (GPU runs), the
// runtime as the median of measured device_used minus planned allocations
// (runs that measured device_used: CPU runs).
DeviceCalibration calibrateDevice(const std::string& gpuId, std::vector<CalibrationRun> runs);

// The run's figures from its plan (estimated without calibration) and what it measured.
CalibrationRun calibrationRun(const PlanResult& plan, double utilisation);

// Sets the input's utilisation, allocator overhead and runtime (as
// cuda_context_gib, which a CPU plan counts as its process) from the calibration
// of its device, unless the input gives them; returns the note, empty when
// none applies.
std::string applyCalibration(
    const Calibration& calibration, const std::string& gpuId, PlanInput& input);

// $TUNEBENCH_CALIBRATION, else $XDG_CONFIG_HOME (or ~/.config)/tunebench/calibration.json.
std::string defaultCalibrationPath();
// A missing file is an empty calibration; a bad one an error naming file and field.
common::Result<Calibration> loadCalibration(const std::string& path);
common::Status saveCalibration(const std::string& path, const Calibration& calibration);

} // namespace tb::plan
