#include "metrics/run_compare.h"

#include "metrics/run_catalog.h"
#include "metrics/run_figures.h"

#include <algorithm>
#include <cmath>

namespace tb::metrics {

namespace {

constexpr std::pair<XAxis, std::string_view> kAxisNames[] = {
    {XAxis::Step, "step"}, {XAxis::Tokens, "tokens"}, {XAxis::WallSeconds, "time"}};

double startSeconds(const RunHistory& history)
{
    if (history.start())
        return history.start()->timeSeconds;
    return history.steps().empty() ? 0.0 : history.steps().front().timeSeconds;
}

} // namespace

std::string_view xAxisName(XAxis axis)
{
    for (const auto& [value, name] : kAxisNames) {
        if (value == axis)
            return name;
    }
    return "step";
}

std::optional<XAxis> xAxisFromName(std::string_view name)
{
    for (const auto& [value, axisName] : kAxisNames) {
        if (axisName == name)
            return value;
    }
    return std::nullopt;
}

std::vector<double> stepPositions(const RunHistory& history, XAxis axis)
{
    std::vector<double> positions;
    positions.reserve(history.steps().size());
    double tokensSeen = 0;
    const double start = startSeconds(history);
    for (const StepRecord& step : history.steps()) {
        tokensSeen += stepTokens(step);
        switch (axis) {
        case XAxis::Step:
            positions.push_back(double(step.step));
            break;
        case XAxis::Tokens:
            positions.push_back(tokensSeen);
            break;
        case XAxis::WallSeconds:
            positions.push_back(step.timeSeconds - start);
            break;
        }
    }
    return positions;
}

std::vector<double> evalPositions(const RunHistory& history, XAxis axis)
{
    std::vector<double> positions;
    positions.reserve(history.evals().size());
    if (axis != XAxis::Tokens) {
        const double start = startSeconds(history);
        for (const EvalPoint& eval : history.evals())
            positions.push_back(axis == XAxis::Step ? double(eval.step) : eval.timeSeconds - start);
        return positions;
    }
    const std::vector<double> stepX = stepPositions(history, axis);
    const std::vector<StepRecord>& steps = history.steps();
    for (const EvalPoint& eval : history.evals()) {
        // The last step at or before the evaluation.
        const auto after = std::upper_bound(steps.begin(), steps.end(), eval.step,
            [](int64_t step, const StepRecord& record) { return step < record.step; });
        positions.push_back(
            after == steps.begin() ? 0.0 : stepX[size_t(after - steps.begin()) - 1]);
    }
    return positions;
}

std::vector<double> smoothed(const std::vector<double>& values, double weight)
{
    if (weight <= 0)
        return values;
    std::vector<double> result;
    result.reserve(values.size());
    double last = 0;
    double weightPower = 1; // weight^n after n finite values
    for (const double value : values) {
        if (!std::isfinite(value)) {
            result.push_back(value);
            continue;
        }
        last = last * weight + (1 - weight) * value;
        weightPower *= weight;
        result.push_back(last / (1 - weightPower));
    }
    return result;
}

nlohmann::json recipeKey(const nlohmann::json& config)
{
    nlohmann::json key = config;
    if (key.is_object()) {
        key.erase("name");
        key.erase("output");
    }
    return key;
}

std::string firstDifference(const nlohmann::json& a, const nlohmann::json& b)
{
    if (a == b)
        return {};
    if (!a.is_object() || !b.is_object())
        return "(value)";
    for (const nlohmann::json* side : {&a, &b}) {
        const nlohmann::json& other = side == &a ? b : a;
        for (const auto& [key, value] : side->items()) {
            const auto it = other.find(key);
            if (it == other.end())
                return key;
            if (*it != value) {
                const std::string inner = firstDifference(value, *it);
                return inner == "(value)" ? key : key + "." + inner;
            }
        }
    }
    return {};
}

std::vector<ScalingPoint> scalingPoints(const std::vector<RunEntry>& runs)
{
    std::vector<const RunEntry*> measured;
    for (const RunEntry& run : runs) {
        if (run.problem.empty() && run.worldSize > 0 && run.tokensPerSecond > 0)
            measured.push_back(&run);
    }
    std::stable_sort(measured.begin(), measured.end(), [](const RunEntry* a, const RunEntry* b) {
        return a->worldSize != b->worldSize ? a->worldSize < b->worldSize
                                            : a->startSeconds < b->startSeconds;
    });
    std::vector<ScalingPoint> points;
    for (const RunEntry* run : measured) {
        ScalingPoint point;
        point.name = run->name;
        point.gpus = run->worldSize;
        point.tokensPerSecond = run->tokensPerSecond;
        point.tokensPerSecondPerGpu = run->tokensPerSecond / run->worldSize;
        point.efficiency = point.tokensPerSecondPerGpu
            / (points.empty() ? point.tokensPerSecondPerGpu : points.front().tokensPerSecondPerGpu);
        if (run->prediction)
            point.predictedTokensPerSecond = run->prediction->tokensPerSecond;
        points.push_back(point);
    }
    return points;
}

double measuredOverPredicted(double measured, double predicted)
{
    return measured > 0 && predicted > 0 ? measured / predicted : std::nan("");
}

} // namespace tb::metrics
