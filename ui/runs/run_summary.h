#pragma once

#include "metrics/run_history.h"

#include <QString>

namespace tb::ui {

// One line on where a run stands, from its history: model and size, ranks
// and sharding, step of total, last loss and tokens/s, last checkpoint, and
// how it ended. Empty history: says nothing has been read yet.
QString describeRun(const metrics::RunHistory& history);

// "completed", "stopped", "failed", or "running" while no run_end came.
QString runState(const metrics::RunHistory& history);

} // namespace tb::ui
