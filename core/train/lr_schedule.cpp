#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tb::train {

LrSchedule::LrSchedule(
    config::Schedule kind, double peakRate, std::int64_t warmupSteps, std::int64_t totalSteps)
    : m_kind(kind)
    , m_peakRate(peakRate)
    , m_warmupSteps(std::max<std::int64_t>(0, warmupSteps))
    , m_totalSteps(std::max<std::int64_t>(1, totalSteps))
{
}

double LrSchedule::multiplierAt(std::int64_t step) const
{
    const std::int64_t done = std::max<std::int64_t>(0, step - 1); // scheduler steps so far
    if (done < m_warmupSteps)
        return static_cast<double>(done)
            / static_cast<double>(std::max<std::int64_t>(1, m_warmupSteps));
    if (m_kind == config::Schedule::Constant)
        return 1.0;
    const double decaySteps =
        static_cast<double>(std::max<std::int64_t>(1, m_totalSteps - m_warmupSteps));
    const double progress = static_cast<double>(done - m_warmupSteps) / decaySteps;
    if (m_kind == config::Schedule::Linear)
        return std::max(0.0, 1.0 - progress);
    return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
}

double LrSchedule::rateAt(std::int64_t step) const
{
    return m_peakRate * multiplierAt(step);
}

std::int64_t warmupStepsFor(const config::TrainingConfig& training, std::int64_t totalSteps)
{
    if (training.warmupSteps > 0)
        return training.warmupSteps;
    return static_cast<std::int64_t>(
        std::ceil(training.warmupRatio * static_cast<double>(totalSteps)));
}

} // namespace tb::train
