#pragma once

#include "config/run_config.h"

#include <cstdint>

namespace tb::train {

// The learning rate of each optimizer step: linear warmup from 0, then a
// cosine or linear decay to 0 at the last step, or a constant rate. The
// multiplier of step s (1-based) is the one transformers' schedules
// (get_cosine_schedule_with_warmup, get_linear_schedule_with_warmup) give
// after s - 1 scheduler steps, so the first step of a warmup runs at rate 0,
// exactly as a Hugging Face Trainer run does.
class LrSchedule {
public:
    LrSchedule(
        config::Schedule kind, double peakRate, std::int64_t warmupSteps, std::int64_t totalSteps);

    // Rate for optimizer step `step` (1-based).
    double rateAt(std::int64_t step) const;
    double multiplierAt(std::int64_t step) const;

    std::int64_t warmupSteps() const { return m_warmupSteps; }
    std::int64_t totalSteps() const { return m_totalSteps; }

private:
    config::Schedule m_kind;
    double m_peakRate;
    std::int64_t m_warmupSteps;
    std::int64_t m_totalSteps;
};

// Warmup steps from the config: warmup_steps, or ceil(warmup_ratio x total)
// as transformers' TrainingArguments.get_warmup_steps computes it.
std::int64_t warmupStepsFor(const config::TrainingConfig& training, std::int64_t totalSteps);

} // namespace tb::train
