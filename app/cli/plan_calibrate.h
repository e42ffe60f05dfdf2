#pragma once

#include "arg_parser.h"

#include "plan/catalog.h"
#include "plan/plan_input.h"

#include <string>

// `tunebench-cli plan --calibrate RUN_DIR...` and the calibration every
// other plan applies (docs/PLANNER.md, "Calibration from our own runs").
namespace tb::cli {

// Plans each run's configuration, holds it against what the run measured,
// writes the calibration file and prints the comparison. Exit status.
int runCalibrate(const ArgParser& p, const plan::Catalog& catalog);

// The calibration file a plan uses: --calibration FILE, else the default
// path; none with --no-calibration.
std::string calibrationPath(const ArgParser& p);

// Applies the calibration of the input's device, when there is one. An
// unreadable file is an error.
common::Status applyCalibrationFile(
    const ArgParser& p, const plan::Catalog& catalog, plan::PlanInput& input);

} // namespace tb::cli
