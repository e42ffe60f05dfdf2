#pragma once

#include "model/model_spec.h"
#include "plan/catalog.h"
#include "plan/plan_input.h"
#include "plan/trainer_support.h"

#include <functional>
#include <string>
#include <vector>

namespace tb::plan {

enum class RankBy {
    Cost, // cheapest total cost first
    Time, // shortest wall-clock first
    CheapestWithinBudget, // cheapest among those finishing within timeBudgetHours
};

struct RecommendOptions {
    RankBy rankBy = RankBy::Cost;
    int maxNodes = 16; // node counts 1..maxNodes; 1..16 are swept, above maxNodes is rejected
    double timeBudgetHours = 0; // 0: no budget
    double maxUsdPerHour = 0; // whole job per hour; 0: no limit
    std::vector<Sharding> strategies; // empty: every strategy
    bool allowPrecisionFallback = true; // bf16 on V100/T4 -> fp16 mixed, noted
    bool includeRetired = false; // NCv3 (retired 2025-09-30) stays rejected unless set
    bool includePreview = false;
    bool trainerRunnableOnly = false; // reject GPUs Tunebench's trainer cannot run on
};

enum class RejectReason {
    DoesNotFit,
    NoBf16, // bf16 asked on a GPU without it and fallback not allowed
    TooManyNodes, // more than maxNodes
    NoPrice, // no price known: cannot rank by cost
    OverBudget, // slower than the time budget / dearer than maxUsdPerHour
    NotForTraining, // fractional vGPU sizes
    Retired,
    Preview,
    Redundant, // a sharded strategy on one GPU is plain training
    InvalidCombination, // e.g. parameter offload with DDP
    NoPeakFigures, // the GPU's peak rates are unknown: no speed, no time
    NotRunnable, // Tunebench's trainer cannot run there, and only runnable options were asked
};

std::string_view toString(RankBy value);
std::string_view toString(RejectReason value);

struct RecommendedOption {
    std::string vmSize;
    std::string gpuId;
    int nodes = 1;
    int gpusPerNode = 1;
    int gpusTotal = 1;
    Sharding strategy = Sharding::Ddp;
    Precision precision = Precision::Bf16Mixed; // after any fallback
    bool fits = true;
    double perGpuBytes = 0;
    double usableBytes = 0;
    double tokensPerSecond = 0;
    double hours = 0;
    double usdPerHour = 0; // all nodes
    double costUsd = 0;
    std::vector<std::string> notes; // "fp16 mixed: V100 has no bf16"
    TrainerSupport trainer; // whether Tunebench's own trainer runs there
    PlanInput input; // the plan this option stands for (apply it to the page)
};

// One rejection, for a run of node counts that failed for the same reason.
struct RejectedOption {
    std::string vmSize;
    Sharding strategy = Sharding::Ddp;
    int nodesFrom = 1;
    int nodesTo = 1;
    RejectReason reason = RejectReason::DoesNotFit;
    std::string detail; // "needs 92.4 GiB per GPU, 79.2 GiB usable"
    // DoesNotFit: the smallest per-GPU need over the run of node counts
    // (the closest this option came to fitting) and the GPU's usable memory.
    double perGpuBytes = 0;
    double usableBytes = 0;
};

struct Recommendation {
    std::vector<RecommendedOption> options; // ranked, best first
    std::vector<RejectedOption> rejected;
    int evaluated = 0; // estimates run
    bool cancelled = false; // the progress hook asked to stop: options are partial
};

// Called after each VM size with (done, total); return false to cancel.
using ProgressHook = std::function<bool(int done, int total)>;

// Every Azure VM size in the catalog x node counts x strategies. The
// model must be resolved already (Catalog::resolveModel).
Recommendation recommend(const PlanInput& input, const model::ModelSpec& model,
    const Catalog& catalog, const RecommendOptions& options = {},
    const ProgressHook& progress = {});

// `input` with what recommend() sweeps itself (VM size, GPU, GPUs per node,
// nodes, sharding) set to fixed values: two inputs give the same
// recommendation exactly when these are equal, so a view can tell whether its
// recommendation is stale.
PlanInput withoutSweptInputs(PlanInput input);

} // namespace tb::plan
