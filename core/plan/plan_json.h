#pragma once

#include "plan/plan_input.h"
#include "plan/plan_result.h"
#include "plan/recommender.h"

#include <nlohmann/json.hpp>

// The --json output of `tunebench-cli plan` (schema in docs/PLAN_JSON.md).
namespace tb::plan {

nlohmann::json planResultToJson(const PlanInput& input, const PlanResult& result);
nlohmann::json recommendationToJson(const Recommendation& recommendation);

} // namespace tb::plan
