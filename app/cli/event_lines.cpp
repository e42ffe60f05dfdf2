#include "event_lines.h"

#include "common/text.h"
#include "common/units.h"
#include "metrics/step_record.h"

#include <cmath>
#include <cstdio>

namespace tb::cli {

namespace {

// A loss as the trainer writes it: null where it was not finite.
std::string lossText(double loss)
{
    return std::isfinite(loss) ? common::formatFixed(loss, 4) : "nan";
}

std::string stepLine(const metrics::StepRecord& step, int64_t totalSteps)
{
    std::string line = "step " + std::to_string(step.step);
    if (totalSteps > 0)
        line += "/" + std::to_string(totalSteps);
    line += "  loss " + lossText(step.loss);
    if (step.tokensPerSecond > 0)
        line += "  " + common::formatRate(step.tokensPerSecond, "tokens");
    if (step.memPeakBytes > 0)
        line += "  peak " + common::formatBytes(double(step.memPeakBytes));
    return line;
}

} // namespace

// Every string of an event is the run's (or another machine's): printed
// with its control characters escaped, one line per event, so it can neither
// drive the terminal nor forge a line of ours (a launch's node lines).
void printEvent(const metrics::Event& event, const metrics::RunHistory& history)
{
    using common::escapeControl;
    const nlohmann::json& body = event.body;
    switch (event.type) {
    case metrics::EventType::RunStart: {
        const metrics::RunStartInfo& start = *history.start();
        const std::string pid = start.pid > 0 ? " (pid " + std::to_string(start.pid) + ")" : "";
        std::printf("run_start  %s on %s%s: %s, world size %d%s%s\n",
            escapeControl(start.runId).c_str(), escapeControl(start.host).c_str(), pid.c_str(),
            escapeControl(start.modelName).c_str(), start.worldSize,
            start.sharding.empty() ? "" : ", ", escapeControl(start.sharding).c_str());
        if (start.resumedFromStep >= 0)
            std::printf("           resumed from step %lld\n",
                static_cast<long long>(start.resumedFromStep));
        break;
    }
    case metrics::EventType::Step:
        std::printf("%s\n",
            stepLine(metrics::StepRecord::fromEvent(event),
                history.start() ? history.start()->totalSteps : -1)
                .c_str());
        break;
    case metrics::EventType::Eval:
        std::printf("eval       step %lld  validation loss %s\n",
            metrics::numberField(body, "step", 0LL),
            lossText(metrics::numberField(body, "loss", std::nan(""))).c_str());
        break;
    case metrics::EventType::Checkpoint:
        std::printf("checkpoint step %lld  %s\n", metrics::numberField(body, "step", 0LL),
            escapeControl(metrics::textField(body, "path")).c_str());
        break;
    case metrics::EventType::Warning:
    case metrics::EventType::Error:
        std::printf("%-10s %s\n", event.typeName.c_str(),
            escapeControl(metrics::textField(body, "message")).c_str());
        break;
    case metrics::EventType::RunEnd:
        std::printf("run_end    %s%s%s\n", escapeControl(history.end()->status).c_str(),
            history.end()->message.empty() ? "" : ": ",
            escapeControl(history.end()->message).c_str());
        break;
    case metrics::EventType::Log:
    case metrics::EventType::Unknown:
        break;
    }
}

} // namespace tb::cli
