#pragma once

// The ranges (and, where the plan and the run must agree, the defaults) of
// the settings a plan and a run configuration both have. The plan's option
// table (plan/plan_options.h) and the run config reader both read them here,
// so a LoRA rank the planner accepts is one the trainer accepts.
namespace tb::common {

struct IntLimit {
    long long min;
    long long max;
};

struct RealLimit {
    double min;
    double max;
};

// LoRA: rank 16 and alpha 32 on every linear layer of the blocks, the
// defaults of the planner and of a run config alike (docs/RUN_CONFIG.md).
inline constexpr int kLoraRankDefault = 16;
inline constexpr double kLoraAlphaDefault = 32.0;
inline constexpr double kLoraDropoutDefault = 0.05;
inline constexpr IntLimit kLoraRankLimit{1, 65536};
inline constexpr RealLimit kLoraAlphaLimit{0.01, 1e6};
// A dropout of 1 would drop every input; 0.99 is as far as any recipe goes.
inline constexpr RealLimit kLoraDropoutLimit{0.0, 0.99};

// DPO's beta (TRL's DPOConfig default), above 0: it divides the IPO target
// and scales every reward.
inline constexpr double kDpoBetaDefault = 0.1;
inline constexpr RealLimit kDpoBetaLimit{0.0, 1e6};
// Label smoothing is the probability a preference was flipped: below 0.5,
// where the robust loss's 1 / (1 - 2 eps) would be infinite.
inline constexpr RealLimit kDpoLabelSmoothingLimit{0.0, 0.5};

// Batch shape. The defaults differ on purpose: a plan describes a GPU
// fine-tune (4 x 2048), a run config the smallest run that trains on a CPU.
inline constexpr IntLimit kMicroBatchLimit{1, 65536};
inline constexpr IntLimit kGradAccumLimit{1, 65536};
inline constexpr IntLimit kSequenceLengthLimit{2, 1 << 24};

} // namespace tb::common
