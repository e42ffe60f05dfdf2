#pragma once

#include "metrics/event.h"
#include "metrics/run_history.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <string>

// Runs the Compare page's overlay tests draw.
namespace tb::test {

// A loss that zigzags step to step, so that a column's extremes differ and
// a decimation for another range or width gives other points, and a wrong
// one loses a column's low or high; the learning rate and memory vary too.
inline std::shared_ptr<const tb::metrics::RunHistory> zigzagRun(int index, int steps)
{
    using nlohmann::json;
    auto history = std::make_shared<tb::metrics::RunHistory>();
    history->apply(*tb::metrics::parseEvent(tb::metrics::makeEvent(tb::metrics::EventType::RunStart,
        0, 1.0e9,
        {{"run_id", "run-" + std::to_string(index)}, {"world_size", 1},
            {"config", json::object()}}).dump()));
    tb::metrics::Event step{tb::metrics::EventType::Step, "step", 0, 1.0e9,
        {{"step", 0}, {"loss", 0.0}, {"lr", 1e-3}, {"tokens", 256}, {"step_seconds", 0.5},
            {"tokens_per_second", 0.0}, {"mem_peak_bytes", int64_t(1) << 28}}};
    for (int s = 1; s <= steps; ++s) {
        step.timeSeconds = 1.0e9 + s * 0.5;
        step.body["step"] = s;
        step.body["loss"] = 3.0 - s * 1e-5 + (s % 2 ? 0.5 : -0.5) * std::sin(s * 0.37 + index);
        step.body["lr"] = 1e-3 * (1 + 0.3 * std::sin(s * 0.011 + index));
        step.body["tokens_per_second"] = 500.0 + 40 * std::cos(s * 1.3 + index);
        step.body["mem_peak_bytes"] = int64_t((1 << 28) * (1 + 0.1 * std::sin(s * 0.7)));
        history->apply(step);
    }
    return history;
}

} // namespace tb::test
