#pragma once

#include "plan/plan_result.h"

#include <QString>

namespace tb::ui {

// The one-line verdict above the chart ("Fits: 27.56 GiB of 79.25 GiB per GPU").
QString planVerdict(const plan::PlanResult& result);

// The lines under it, as rich text: model and hardware, speed, time, cost,
// and the planner's warnings.
QString planDetailsHtml(const plan::PlanResult& result);

} // namespace tb::ui
