#pragma once

#include "plan/plan_result.h"

#include <QColor>

namespace tb::ui {

// One colour per memory category, the same in every chart, table and report,
// so "orange" always means gradients.
QColor categoryColor(plan::MemoryCategory category);

// The colour for the capacity line and for plans that do not fit.
QColor capacityColor();
QColor overCapacityColor();
QColor throughputColor();
// The ticks that mark the three peaks on the memory bar.
QColor peakMarkColor();

} // namespace tb::ui
