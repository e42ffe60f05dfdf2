#pragma once

#include "common/error.h"
#include "plan/plan_input.h"
#include "plan/plan_result.h"
#include "plan/recommender.h"

#include <QString>

namespace tb::ui {

// The recommendations as CSV (RFC 4180 quoting), one row per option with raw
// numbers, for a spreadsheet. Written atomically.
std::string recommendationsCsv(const plan::Recommendation& recommendation);

// A Markdown report of the plan: inputs, the memory breakdown with every
// explanation, throughput, time and cost, the best options, and the charts
// as PNG files beside it (names relative to the report).
struct ReportImages {
    QString breakdownPng;
    QString whatIfPng;
};
std::string planReportMarkdown(const plan::PlanInput& input, const plan::PlanResult& result,
    const plan::Recommendation* recommendation, const ReportImages& images);

common::Status writeTextFile(const QString& path, const std::string& content);

} // namespace tb::ui
