#pragma once

#include "plan/plan_input.h"
#include "plan/plan_result.h"
#include "plan/recommender.h"

#include <ostream>
#include <vector>

// Human-readable output of `tunebench-cli plan`: the plan table, with
// --explain the formula and source under each figure, and the ranked VM list.
namespace tb::cli {

void printPlan(
    std::ostream& out, const plan::PlanInput& input, const plan::PlanResult& result, bool explain);
// Tokens/s and scaling efficiency from 1 to N nodes of the plan's VM and strategy.
void printScaling(std::ostream& out, const std::vector<plan::ScalingPoint>& points);
void printRecommendation(std::ostream& out, const plan::Recommendation& rec,
    const plan::RecommendOptions& options, bool explain, size_t maxRows);

} // namespace tb::cli
