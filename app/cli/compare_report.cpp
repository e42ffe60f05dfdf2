#include "compare_report.h"

#include "common/units.h"
#include "metrics/run_compare.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <string>

namespace tb::cli {

namespace {

using common::formatBytes;
using common::formatDuration;
using common::formatFixed;
using Row = std::vector<std::string>;

const std::string kUnknown = "-";

// Columns as wide as their widest cell; the first left-aligned, numbers right.
void printTable(std::ostream& out, const std::vector<Row>& rows)
{
    std::vector<size_t> widths;
    for (const Row& row : rows) {
        widths.resize(std::max(widths.size(), row.size()));
        for (size_t c = 0; c < row.size(); ++c)
            widths[c] = std::max(widths[c], row[c].size());
    }
    for (const Row& row : rows) {
        out << " ";
        for (size_t c = 0; c < row.size(); ++c) {
            out << " " << (c == 0 || c + 1 == row.size() ? std::left : std::right)
                << std::setw(int(widths[c])) << row[c];
        }
        out << std::right << "\n";
    }
}

std::string orUnknown(double value, const std::string& text)
{
    return value >= 0 ? text : kUnknown;
}

std::string loss(double value)
{
    return std::isfinite(value) ? formatFixed(value, 4) : kUnknown;
}

std::string rate(double tokensPerSecond)
{
    return orUnknown(tokensPerSecond, formatFixed(tokensPerSecond, 0));
}

std::string ratio(double value)
{
    return std::isfinite(value) ? formatFixed(value, 2) + "x" : kUnknown;
}

std::string localTime(double unixSeconds)
{
    if (unixSeconds <= 0)
        return kUnknown;
    const std::time_t seconds = static_cast<std::time_t>(unixSeconds);
    std::tm parts{};
    localtime_r(&seconds, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &parts);
    return text;
}

std::string steps(const metrics::RunEntry& run)
{
    return std::to_string(run.steps)
        + (run.totalSteps > 0 ? "/" + std::to_string(run.totalSteps) : "");
}

std::string ranks(const metrics::RunEntry& run)
{
    return std::to_string(run.worldSize)
        + (run.nodes > 1 ? " on " + std::to_string(run.nodes) + " nodes" : "");
}

const metrics::ScalingPoint* pointOf(
    const std::vector<metrics::ScalingPoint>& points, const metrics::RunEntry& run)
{
    const auto it = std::find_if(points.begin(), points.end(), [&](const metrics::ScalingPoint& p) {
        return p.name == run.name && p.gpus == run.worldSize
            && p.tokensPerSecond == run.tokensPerSecond;
    });
    return it == points.end() ? nullptr : &*it;
}

} // namespace

void printRunsTable(std::ostream& out, const std::vector<metrics::RunEntry>& runs)
{
    std::vector<Row> rows{{"name", "model", "method", "ranks", "state", "steps", "loss", "tokens/s",
        "started", "duration", "folder"}};
    for (const metrics::RunEntry& run : runs) {
        if (!run.problem.empty()) {
            rows.push_back({run.name, kUnknown, kUnknown, kUnknown, "unreadable", kUnknown,
                kUnknown, kUnknown, kUnknown, kUnknown, run.dir + ": " + run.problem});
            continue;
        }
        rows.push_back({run.name, run.modelName, run.method, ranks(run), run.state, steps(run),
            loss(run.lastLoss), rate(run.tokensPerSecond), localTime(run.startSeconds),
            orUnknown(run.durationSeconds, formatDuration(run.durationSeconds)), run.dir});
    }
    printTable(out, rows);
}

void printComparison(std::ostream& out, const std::vector<metrics::RunEntry>& runs)
{
    const std::vector<metrics::ScalingPoint> points = metrics::scalingPoints(runs);
    std::vector<Row> measured{{"run", "ranks", "state", "steps", "final loss", "tokens/s",
        "tokens/s per rank", "efficiency", "step time", "peak memory"}};
    std::vector<Row> predicted{{"run", "device", "tokens/s", "predicted", "ratio", "step time",
        "predicted", "ratio", "peak memory", "predicted", "ratio"}};
    for (const metrics::RunEntry& run : runs) {
        const metrics::ScalingPoint* point = pointOf(points, run);
        measured.push_back({run.name, ranks(run), run.state, steps(run), loss(run.lastLoss),
            rate(run.tokensPerSecond), point ? rate(point->tokensPerSecondPerGpu) : kUnknown,
            point ? formatFixed(point->efficiency * 100, 1) + " %" : kUnknown,
            orUnknown(run.stepSeconds, formatFixed(run.stepSeconds, 3) + " s"),
            orUnknown(double(run.peakBytes), formatBytes(double(run.peakBytes)))});
        if (!run.prediction)
            continue;
        const metrics::RunPrediction& p = *run.prediction;
        predicted.push_back({run.name, p.device, rate(run.tokensPerSecond), rate(p.tokensPerSecond),
            ratio(metrics::measuredOverPredicted(run.tokensPerSecond, p.tokensPerSecond)),
            orUnknown(run.stepSeconds, formatFixed(run.stepSeconds, 3)),
            orUnknown(p.stepSeconds, formatFixed(p.stepSeconds, 3)),
            ratio(metrics::measuredOverPredicted(run.stepSeconds, p.stepSeconds)),
            orUnknown(double(run.peakBytes), formatBytes(double(run.peakBytes))),
            orUnknown(double(p.peakBytesPerRank), formatBytes(double(p.peakBytesPerRank))),
            ratio(metrics::measuredOverPredicted(
                double(run.peakBytes), double(p.peakBytesPerRank)))});
    }
    printTable(out, measured);
    out << "\n  Efficiency: tokens/s per rank against the smallest run's ("
        << (points.empty() ? std::string("none measured") : points.front().name) << ").\n";
    if (predicted.size() == 1) {
        out << "  No run records a planner prediction (run_start has no \"prediction\").\n";
        return;
    }
    out << "\n  Measured against the planner's prediction for each run's own configuration:\n";
    printTable(out, predicted);
}

void printComparisonJson(std::ostream& out, const std::vector<metrics::RunEntry>& runs)
{
    nlohmann::json result = {
        {"runs", nlohmann::json::array()}, {"scaling", nlohmann::json::array()}};
    auto orNull = [](double value) {
        return value >= 0 && std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
    };
    for (const metrics::RunEntry& run : runs) {
        nlohmann::json item = {{"name", run.name}, {"dir", run.dir}, {"state", run.state},
            {"world_size", run.worldSize}, {"steps", run.steps},
            {"final_loss", orNull(run.lastLoss)},
            {"tokens_per_second", orNull(run.tokensPerSecond)},
            {"step_seconds", orNull(run.stepSeconds)},
            {"peak_bytes", run.peakBytes >= 0 ? nlohmann::json(run.peakBytes) : nlohmann::json()}};
        if (!run.problem.empty())
            item["problem"] = run.problem;
        if (run.prediction)
            item["prediction"] = run.prediction->toJson();
        result["runs"].push_back(item);
    }
    for (const metrics::ScalingPoint& point : metrics::scalingPoints(runs)) {
        result["scaling"].push_back({{"name", point.name}, {"gpus", point.gpus},
            {"tokens_per_second", point.tokensPerSecond},
            {"tokens_per_second_per_gpu", point.tokensPerSecondPerGpu},
            {"efficiency", point.efficiency},
            {"predicted_tokens_per_second", orNull(point.predictedTokensPerSecond)}});
    }
    out << result.dump(2) << "\n";
}

} // namespace tb::cli
