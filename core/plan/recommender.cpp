#include "plan/recommender.h"

#include "common/units.h"
#include "plan/estimator.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>

namespace tb::plan {

std::string_view toString(RankBy value)
{
    switch (value) {
    case RankBy::Cost:
        return "cost";
    case RankBy::Time:
        return "time";
    case RankBy::CheapestWithinBudget:
        return "cheapest-within-budget";
    }
    return "?";
}

std::string_view toString(RejectReason value)
{
    switch (value) {
    case RejectReason::DoesNotFit:
        return "does-not-fit";
    case RejectReason::NoBf16:
        return "no-bf16";
    case RejectReason::TooManyNodes:
        return "too-many-nodes";
    case RejectReason::NoPrice:
        return "no-price";
    case RejectReason::OverBudget:
        return "over-budget";
    case RejectReason::NotForTraining:
        return "not-for-training";
    case RejectReason::Retired:
        return "retired";
    case RejectReason::Preview:
        return "preview";
    case RejectReason::Redundant:
        return "redundant";
    case RejectReason::InvalidCombination:
        return "invalid-combination";
    case RejectReason::NoPeakFigures:
        return "no-peak-figures";
    case RejectReason::NotRunnable:
        return "not-runnable";
    }
    return "?";
}

namespace {

constexpr int kSweptNodes = 16;
constexpr std::array kAllStrategies = {Sharding::Ddp, Sharding::Zero1, Sharding::Zero2,
    Sharding::Zero3, Sharding::FsdpFull, Sharding::FsdpGradOp, Sharding::FsdpHybrid};

// Rejections accumulate per (VM, strategy) and merge runs of node counts
// that failed for the same reason, so a table shows "1-3 nodes: does not fit".
class Rejections {
public:
    explicit Rejections(std::vector<RejectedOption>& out)
        : m_out(out)
    {
    }

    void add(const VmSize& vm, Sharding strategy, int nodes, RejectReason reason,
        std::string detail, const PlanResult* plan = nullptr)
    {
        if (!m_out.empty()) {
            RejectedOption& last = m_out.back();
            if (last.vmSize == vm.name && last.strategy == strategy && last.reason == reason
                && last.nodesTo + 1 == nodes) {
                last.nodesTo = nodes;
                if (plan && plan->perGpuBytes < last.perGpuBytes) {
                    last.perGpuBytes = plan->perGpuBytes;
                    last.detail = std::move(detail) + " at " + std::to_string(nodes) + " nodes";
                }
                return;
            }
        }
        RejectedOption& r = m_out.emplace_back();
        r.vmSize = vm.name;
        r.strategy = strategy;
        r.nodesFrom = r.nodesTo = nodes;
        r.reason = reason;
        r.detail = std::move(detail);
        if (plan) {
            r.perGpuBytes = plan->perGpuBytes;
            r.usableBytes = plan->usableBytes;
        }
    }

    // The whole VM for every strategy and node count at once.
    void addVm(const VmSize& vm, const std::vector<Sharding>& strategies, int maxNodes,
        RejectReason reason, const std::string& detail)
    {
        for (Sharding s : strategies) {
            RejectedOption& r = m_out.emplace_back();
            r.vmSize = vm.name;
            r.strategy = s;
            r.nodesFrom = 1;
            r.nodesTo = maxNodes;
            r.reason = reason;
            r.detail = detail;
        }
    }

private:
    std::vector<RejectedOption>& m_out;
};

std::string fitDetail(const PlanResult& r)
{
    if (r.perGpuBytes > r.usableBytes)
        return "needs " + common::formatBytes(r.perGpuBytes) + " per GPU, "
            + common::formatBytes(r.usableBytes) + " usable";
    return "offloaded states need " + common::formatBytes(r.cpuBytesPerNode) + " of "
        + common::formatBytes(r.vmRamBytes) + " VM RAM";
}

} // namespace

Recommendation recommend(const PlanInput& input, const model::ModelSpec& model,
    const Catalog& catalog, const RecommendOptions& options, const ProgressHook& progress)
{
    Recommendation rec;
    Rejections rejections(rec.rejected);
    const std::vector<Sharding> strategies = options.strategies.empty()
        ? std::vector<Sharding>(kAllStrategies.begin(), kAllStrategies.end())
        : options.strategies;
    const bool needsPrice = options.rankBy != RankBy::Time || options.maxUsdPerHour > 0;
    const int swept = std::max(kSweptNodes, 1);
    const EstimateOptions quiet{false};
    const int total = int(catalog.vms().size());
    int done = 0;

    for (const VmSize& vm : catalog.vms()) {
        const GpuSpec* gpu = catalog.findGpu(vm.gpuId);
        const auto finishVm = [&]() {
            ++done;
            if (progress && !progress(done, total))
                rec.cancelled = true;
        };
        if (!gpu) {
            finishVm();
            if (rec.cancelled)
                break;
            continue;
        }
        std::string vmProblem;
        RejectReason vmReason = RejectReason::NotForTraining;
        if (vm.fractionalGpu) {
            vmProblem = "a vGPU slice for graphics (" + common::formatFixed(vm.gpuFraction * 100, 0)
                + "% of an " + gpu->id + ")";
        } else if (vm.status == "retired" && !options.includeRetired) {
            vmReason = RejectReason::Retired;
            vmProblem = vm.statusNote;
        } else if (vm.status == "preview" && !options.includePreview) {
            vmReason = RejectReason::Preview;
            vmProblem = "preview size: " + vm.statusNote;
        } else if (gpu->bf16Tflops <= 0 && gpu->fp16Tflops <= 0) {
            vmReason = RejectReason::NoPeakFigures;
            vmProblem = "no peak figures are known for " + gpu->id;
        } else if (options.trainerRunnableOnly && !tunebenchTrainerSupport(*gpu).runs) {
            vmReason = RejectReason::NotRunnable;
            vmProblem = tunebenchTrainerSupport(*gpu).reason;
        } else if (needsPrice && !vm.usdPerHour) {
            vmReason = RejectReason::NoPrice;
            vmProblem = "no price known (" + vm.priceSource + ")";
        }
        PlanInput base = input;
        base.vmSize = vm.name;
        base.gpu.clear();
        base.gpusPerNode = vm.gpusPerVm;
        std::vector<std::string> notes;
        for (const std::string& note : vm.notes)
            if (note.rfind("ROCm/RCCL stack", 0) == 0 || note.rfind("Arm64", 0) == 0)
                notes.push_back(note);
        const bool wantsBf16 =
            input.precision == Precision::Bf16Mixed || input.precision == Precision::Bf16;
        if (vmProblem.empty() && wantsBf16 && !gpu->bf16Supported) {
            if (options.allowPrecisionFallback) {
                base.precision = Precision::Fp16Mixed;
                notes.push_back("fp16 mixed: " + gpu->id + " has no bf16");
            } else {
                vmReason = RejectReason::NoBf16;
                vmProblem = gpu->id + " has no bf16 (allow the fp16 fallback to consider it)";
            }
        }
        if (!vmProblem.empty()) {
            rejections.addVm(vm, strategies, std::max(1, std::min(options.maxNodes, swept)),
                vmReason, vmProblem);
            finishVm();
            if (rec.cancelled)
                break;
            continue;
        }

        for (Sharding strategy : strategies) {
            PlanInput candidate = base;
            candidate.sharding = strategy;
            if (common::Status valid = validatePlanInput(candidate); !valid) {
                rejections.addVm(vm, {strategy}, std::max(1, std::min(options.maxNodes, swept)),
                    RejectReason::InvalidCombination, valid.error().message);
                continue;
            }
            for (int nodes = 1; nodes <= swept; ++nodes) {
                if (nodes > options.maxNodes) {
                    rejections.add(vm, strategy, nodes, RejectReason::TooManyNodes,
                        "more than " + std::to_string(options.maxNodes) + " nodes allowed");
                    continue;
                }
                const int world = vm.gpusPerVm * nodes;
                if (world == 1 && strategy != Sharding::Ddp) {
                    rejections.add(vm, strategy, nodes, RejectReason::Redundant,
                        "one GPU: nothing to shard (same as DDP)");
                    continue;
                }
                if (strategy == Sharding::FsdpHybrid && nodes == 1) {
                    rejections.add(vm, strategy, nodes, RejectReason::Redundant,
                        "one node: same as FSDP FULL_SHARD");
                    continue;
                }
                candidate.nodes = nodes;
                const PlanResult r = estimatePlan(candidate, model, *gpu, &vm, quiet);
                ++rec.evaluated;
                if (!r.fits) {
                    rejections.add(vm, strategy, nodes, RejectReason::DoesNotFit, fitDetail(r), &r);
                    continue;
                }
                const double usdPerHour = vm.usdPerHour ? *vm.usdPerHour * nodes : 0;
                if (options.maxUsdPerHour > 0 && usdPerHour > options.maxUsdPerHour) {
                    rejections.add(vm, strategy, nodes, RejectReason::OverBudget,
                        common::formatMoney(usdPerHour) + "/h is over "
                            + common::formatMoney(options.maxUsdPerHour) + "/h");
                    continue;
                }
                if (options.timeBudgetHours > 0 && r.hours > options.timeBudgetHours) {
                    rejections.add(vm, strategy, nodes, RejectReason::OverBudget,
                        common::formatFixed(r.hours, 1) + " h is over the "
                            + common::formatFixed(options.timeBudgetHours, 1) + " h budget");
                    continue;
                }
                RecommendedOption& o = rec.options.emplace_back();
                o.vmSize = vm.name;
                o.gpuId = gpu->id;
                o.nodes = nodes;
                o.gpusPerNode = vm.gpusPerVm;
                o.gpusTotal = world;
                o.strategy = strategy;
                o.precision = candidate.precision;
                o.fits = true;
                o.perGpuBytes = r.perGpuBytes;
                o.usableBytes = r.usableBytes;
                o.tokensPerSecond = r.tokensPerSecond;
                o.hours = r.hours;
                o.usdPerHour = usdPerHour;
                o.costUsd = r.costKnown ? r.costUsd : 0;
                o.notes = notes;
                o.trainer = tunebenchTrainerSupport(*gpu);
                o.input = candidate;
            }
        }
        finishVm();
        if (rec.cancelled)
            break;
    }

    // Costs and times within 1% of each other are a tie (the model is not
    // that precise): then fewer nodes, then the other criterion, win.
    const auto bucket = [](double value) {
        return value > 0 ? std::llround(std::log(value) / std::log(1.01)) : LLONG_MIN;
    };
    const auto byCost = [&](const RecommendedOption& a, const RecommendedOption& b) {
        const long long ca = bucket(a.costUsd), cb = bucket(b.costUsd);
        if (ca != cb)
            return ca < cb;
        if (a.nodes != b.nodes)
            return a.nodes < b.nodes;
        return a.hours < b.hours;
    };
    const auto byTime = [&](const RecommendedOption& a, const RecommendedOption& b) {
        const long long ha = bucket(a.hours), hb = bucket(b.hours);
        if (ha != hb)
            return ha < hb;
        if (a.nodes != b.nodes)
            return a.nodes < b.nodes;
        return a.costUsd < b.costUsd;
    };
    if (options.rankBy == RankBy::Time)
        std::stable_sort(rec.options.begin(), rec.options.end(), byTime);
    else
        std::stable_sort(rec.options.begin(), rec.options.end(), byCost);
    return rec;
}

PlanInput withoutSweptInputs(PlanInput input)
{
    input.vmSize.clear();
    input.gpu.clear();
    input.gpusPerNode = 0;
    input.nodes = 1;
    input.sharding = Sharding::Ddp;
    input.calibrationNote.clear();
    return input;
}

} // namespace tb::plan
