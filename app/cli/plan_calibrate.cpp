#include "plan_calibrate.h"

#include "commands.h"

#include "common/units.h"
#include "launch/run_plan.h"
#include "plan/calibration.h"
#include "plan/estimator.h"

#include <iomanip>
#include <iostream>
#include <map>

namespace tb::cli {

namespace {

using common::formatBytes;
using common::formatFixed;

int usage(const common::Error& error)
{
    std::cerr << "plan --calibrate: " << error.message << "\n";
    if (!error.hint.empty())
        std::cerr << "hint: " << error.hint << "\n";
    return kExitUsage;
}

// What the run measured against the plan of its configuration.
plan::CalibrationRun compare(const launch::RunMeasurement& m, const plan::PlanResult& r)
{
    const plan::Figure* utilisation = r.figure("utilisation");
    plan::CalibrationRun run = plan::calibrationRun(r, utilisation ? utilisation->value : 0);
    run.runDir = m.runDir;
    run.runId = m.runId;
    run.measuredTokensPerSecond = m.tokensPerSecond;
    if (m.onCpu) {
        run.peak = plan::PeakLevel::Device; // peak resident memory
        run.measuredPeakBytes = m.peakResidentBytes;
    } else {
        run.peak =
            m.peakReservedBytes >= 0 ? plan::PeakLevel::Reserved : plan::PeakLevel::Allocated;
        run.measuredPeakBytes =
            m.peakReservedBytes >= 0 ? m.peakReservedBytes : m.peakAllocatedBytes;
        if (m.peakReservedBytes >= 0 && m.peakAllocatedBytes >= 0)
            run.measuredReserveBytes = m.peakReservedBytes - m.peakAllocatedBytes;
    }
    run.plannedPeakBytes = r.stepPeakAt(run.peak);
    return run;
}

void printRun(const plan::CalibrationRun& run)
{
    const double rate = run.plannedTokensPerSecond > 0
        ? run.measuredTokensPerSecond / run.plannedTokensPerSecond
        : 0;
    std::cout << "  " << std::left << std::setw(28) << run.runId << std::right << std::setw(12)
              << formatFixed(run.plannedTokensPerSecond, 1) << std::setw(12)
              << formatFixed(run.measuredTokensPerSecond, 1) << std::setw(8) << formatFixed(rate, 2)
              << "   " << std::left << std::setw(15) << plan::peakKey(run.peak) << std::right
              << std::setw(12) << formatBytes(run.plannedPeakBytes) << std::setw(12)
              << (run.measuredPeakBytes >= 0 ? formatBytes(run.measuredPeakBytes) : "-") << "\n";
}

} // namespace

std::string calibrationPath(const ArgParser& p)
{
    if (p.isSet("no-calibration"))
        return {};
    return p.isSet("calibration") ? p.value("calibration") : plan::defaultCalibrationPath();
}

common::Status applyCalibrationFile(
    const ArgParser& p, const plan::Catalog& catalog, plan::PlanInput& input)
{
    const std::string path = calibrationPath(p);
    if (path.empty())
        return common::Ok{};
    const common::Result<plan::Calibration> calibration = plan::loadCalibration(path);
    if (!calibration)
        return calibration.error();
    const common::Result<plan::ResolvedHardware> hw = plan::resolveHardware(input, catalog);
    if (hw)
        plan::applyCalibration(*calibration, hw->gpu->id, input);
    return common::Ok{};
}

int runCalibrate(const ArgParser& p, const plan::Catalog& catalog)
{
    const std::vector<std::string> dirs = p.positionals();
    if (dirs.empty())
        return usage({"no run folders given", "plan --calibrate RUN_DIR... [--gpu ID]"});
    const std::string path =
        p.isSet("calibration") ? p.value("calibration") : plan::defaultCalibrationPath();
    common::Result<plan::Calibration> calibration = plan::loadCalibration(path);
    if (!calibration)
        return usage(calibration.error());
    std::map<std::string, std::vector<plan::CalibrationRun>> byDevice;
    std::cout << "  " << std::left << std::setw(28) << "run" << std::right << std::setw(12)
              << "plan tok/s" << std::setw(12) << "run tok/s" << std::setw(8) << "ratio"
              << "   " << std::left << std::setw(15) << "peak" << std::right << std::setw(12)
              << "plan" << std::setw(12) << "run"
              << "\n";
    for (const std::string& dir : dirs) {
        const common::Result<launch::RunMeasurement> m =
            launch::readRunMeasurement(dir, p.value("gpu"), p.value("model"));
        if (!m)
            return usage(m.error());
        const common::Result<plan::PlanResult> r = plan::planFromCatalog(m->input, catalog);
        if (!r)
            return usage({dir + ": the run's configuration does not plan: " + r.error().message,
                r.error().hint});
        byDevice[r->gpuId].push_back(compare(*m, *r));
        printRun(byDevice[r->gpuId].back());
    }
    for (auto& [gpu, runs] : byDevice) {
        plan::DeviceCalibration device = plan::calibrateDevice(gpu, std::move(runs));
        std::cout << gpu << ": utilisation " << formatFixed(device.utilisation, 3)
                  << (device.allocatorOverhead > 0 ? ", allocator reserve "
                                 + formatFixed(device.allocatorOverhead * 100, 1)
                                 + " % of the transients"
                                                   : std::string())
                  << (device.runtimeBytes > 0
                             ? ", runtime beyond the tensors " + formatBytes(device.runtimeBytes)
                             : std::string())
                  << " (" << device.note() << ")\n";
        calibration.value().set(std::move(device));
    }
    if (common::Status saved = plan::saveCalibration(path, *calibration); !saved) {
        std::cerr << saved.error().message << "\n";
        return kExitFailure;
    }
    std::cout << "written to " << path << "; later plans on these devices apply it\n";
    return kExitOk;
}

} // namespace tb::cli
