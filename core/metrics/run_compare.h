#pragma once

#include "metrics/run_figures.h"
#include "metrics/run_history.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The arithmetic of comparing runs (docs/COMPARE.md): where each step lies on
// a shared x-axis, TensorBoard's smoothing, steady throughput, and scaling
// efficiency across GPU counts.
namespace tb::metrics {

struct RunEntry;

enum class XAxis {
    Step, // optimizer step
    Tokens, // tokens trained on through that step, every rank
    WallSeconds, // seconds since the run's first run_start
};

std::string_view xAxisName(XAxis axis); // "step", "tokens", "time"
std::optional<XAxis> xAxisFromName(std::string_view name);

// The x of each of history.steps() on `axis`.
std::vector<double> stepPositions(const RunHistory& history, XAxis axis);
// The x of each of history.evals(): an evaluation after step s lies where
// step s does (before the first step: at 0 tokens, at its own time).
std::vector<double> evalPositions(const RunHistory& history, XAxis axis);

// Exponential moving average with the start-up bias removed, as TensorBoard
// smooths scalars: last = w*last + (1-w)*v, shown as last / (1 - w^n) after
// n finite values. Non-finite values pass through unchanged and do not
// count. `weight` in [0, 1); 0 returns the values as they are.
std::vector<double> smoothed(const std::vector<double>& values, double weight);

// The run config without what names a run rather than shapes it (name,
// output): two runs with equal recipe keys differ only in where they ran
// and on how many ranks, which is what a scaling curve compares.
nlohmann::json recipeKey(const nlohmann::json& config);

// The first place two configs differ, as a dotted path ("training.learning_rate"),
// or empty when they are equal.
std::string firstDifference(const nlohmann::json& a, const nlohmann::json& b);

struct ScalingPoint {
    std::string name;
    int gpus = 0; // world size: one rank per GPU (per process on a CPU)
    double tokensPerSecond = -1;
    double tokensPerSecondPerGpu = -1;
    // Per-GPU rate against the smallest run's: 1 is perfect scaling.
    double efficiency = -1;
    double predictedTokensPerSecond = -1; // from the run's run_start, -1 when none
};

// One point per run with a measured rate, by GPU count (then start time);
// efficiency against the first point.
std::vector<ScalingPoint> scalingPoints(const std::vector<RunEntry>& runs);

// measured / predicted, or NaN when either is unknown.
double measuredOverPredicted(double measured, double predicted);

} // namespace tb::metrics
