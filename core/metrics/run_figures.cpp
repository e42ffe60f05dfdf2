#include "metrics/run_figures.h"

#include <algorithm>

namespace tb::metrics {

double stepTokens(const StepRecord& step)
{
    if (step.tokens >= 0)
        return double(step.tokens);
    if (step.tokensPerSecond >= 0 && step.stepSeconds >= 0)
        return step.tokensPerSecond * step.stepSeconds;
    return 0;
}

double steadyTokensPerSecond(const std::vector<StepRecord>& steps)
{
    if (steps.empty())
        return -1;
    if (steps.size() == 1)
        return steps.front().tokensPerSecond;
    double tokens = 0;
    double seconds = 0;
    for (size_t i = 1; i < steps.size(); ++i) {
        if (steps[i].stepSeconds > 0 && stepTokens(steps[i]) > 0) {
            tokens += stepTokens(steps[i]);
            seconds += steps[i].stepSeconds;
        }
    }
    return seconds > 0 ? tokens / seconds : -1;
}

double steadyStepSeconds(const std::vector<StepRecord>& steps)
{
    double seconds = 0;
    int counted = 0;
    for (size_t i = steps.size() > 1 ? 1 : 0; i < steps.size(); ++i) {
        if (steps[i].stepSeconds >= 0) {
            seconds += steps[i].stepSeconds;
            ++counted;
        }
    }
    return counted > 0 ? seconds / counted : -1;
}

int64_t peakBytes(const std::vector<StepRecord>& steps)
{
    int64_t peak = -1;
    for (const StepRecord& step : steps)
        peak = std::max(peak, step.memPeakBytes);
    return peak;
}

int64_t peakReservedBytes(const std::vector<StepRecord>& steps)
{
    int64_t peak = -1;
    for (const StepRecord& step : steps)
        peak = std::max(peak, step.memPeakReservedBytes);
    return peak;
}

} // namespace tb::metrics
