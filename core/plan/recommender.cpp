#include "plan/recommender.h"

#include "common/units.h"
#include "plan/estimator.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <optional>

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

// A VM size as the sweep sees it: the plan on it (its GPU, all of its GPUs,
// fp16 where the GPU has no bf16 and the fallback is allowed), the notes every
// option on it carries, and why it is left out, if it is.
struct VmScreen {
    PlanInput base;
    std::vector<std::string> notes;
    RejectReason reason = RejectReason::NotForTraining;
    std::string problem; // empty: swept
};

VmScreen screenVm(const VmSize& vm, const GpuSpec& gpu, const PlanInput& input,
    const model::ModelSpec& model, const RecommendOptions& options)
{
    VmScreen screen;
    const bool needsPrice = options.rankBy != RankBy::Time || options.maxUsdPerHour > 0;
    const auto refuse = [&screen](RejectReason reason, std::string problem) {
        screen.reason = reason;
        screen.problem = std::move(problem);
    };
    if (vm.fractionalGpu)
        refuse(RejectReason::NotForTraining,
            "a vGPU slice for graphics (" + common::formatFixed(vm.gpuFraction * 100, 0)
                + "% of an " + gpu.id + ")");
    else if (vm.status == "retired" && !options.includeRetired)
        refuse(RejectReason::Retired, vm.statusNote);
    else if (vm.status == "preview" && !options.includePreview)
        refuse(RejectReason::Preview, "preview size: " + vm.statusNote);
    else if (gpu.bf16Tflops <= 0 && gpu.fp16Tflops <= 0)
        refuse(RejectReason::NoPeakFigures, "no peak figures are known for " + gpu.id);
    else if (options.trainerRunnableOnly && !tunebenchTrainerSupport(gpu, model).runs)
        refuse(RejectReason::NotRunnable, tunebenchTrainerSupport(gpu, model).reason);
    else if (needsPrice && !vm.usdPerHour)
        refuse(RejectReason::NoPrice, "no price known (" + vm.priceSource + ")");
    screen.base = input;
    screen.base.vmSize = vm.name;
    screen.base.gpu.clear();
    screen.base.gpusPerNode = vm.gpusPerVm;
    if (vm.rocm)
        screen.notes.push_back("ROCm/RCCL stack, not CUDA");
    if (vm.arm64Host)
        screen.notes.push_back("Arm64 (Grace) host");
    const bool wantsBf16 =
        input.precision == Precision::Bf16Mixed || input.precision == Precision::Bf16;
    if (screen.problem.empty() && wantsBf16 && !gpu.bf16Supported) {
        if (options.allowPrecisionFallback) {
            screen.base.precision = Precision::Fp16Mixed;
            screen.notes.push_back("fp16 mixed: " + gpu.id + " has no bf16");
        } else {
            refuse(RejectReason::NoBf16,
                gpu.id + " has no bf16 (allow the fp16 fallback to consider it)");
        }
    }
    return screen;
}

// Why `nodes` nodes of `vm` under `strategy` are not worth planning, if so.
std::optional<std::pair<RejectReason, std::string>> pointless(
    const VmSize& vm, Sharding strategy, int nodes, const RecommendOptions& options)
{
    if (nodes > options.maxNodes)
        return std::pair{RejectReason::TooManyNodes,
            "more than " + std::to_string(options.maxNodes) + " nodes allowed"};
    if (vm.gpusPerVm * nodes == 1 && strategy != Sharding::Ddp)
        return std::pair{
            RejectReason::Redundant, std::string("one GPU: nothing to shard (same as DDP)")};
    if (strategy == Sharding::FsdpHybrid && nodes == 1)
        return std::pair{RejectReason::Redundant, std::string("one node: same as FSDP FULL_SHARD")};
    return std::nullopt;
}

// Over a budget the options set, if so.
std::optional<std::string> overBudget(
    const PlanResult& r, double usdPerHour, const RecommendOptions& options)
{
    if (options.maxUsdPerHour > 0 && usdPerHour > options.maxUsdPerHour)
        return common::formatMoney(usdPerHour) + "/h is over "
            + common::formatMoney(options.maxUsdPerHour) + "/h";
    if (options.timeBudgetHours > 0 && r.hours > options.timeBudgetHours)
        return common::formatFixed(r.hours, 1) + " h is over the "
            + common::formatFixed(options.timeBudgetHours, 1) + " h budget";
    return std::nullopt;
}

RecommendedOption optionOf(const VmSize& vm, const GpuSpec& gpu, const model::ModelSpec& model,
    const PlanInput& candidate, const PlanResult& r, double usdPerHour,
    const std::vector<std::string>& notes)
{
    RecommendedOption o;
    o.vmSize = vm.name;
    o.gpuId = gpu.id;
    o.nodes = candidate.nodes;
    o.gpusPerNode = vm.gpusPerVm;
    o.gpusTotal = vm.gpusPerVm * candidate.nodes;
    o.strategy = candidate.sharding;
    o.precision = candidate.precision;
    o.fits = true;
    o.perGpuBytes = r.perGpuBytes;
    o.usableBytes = r.usableBytes;
    o.tokensPerSecond = r.tokensPerSecond;
    o.hours = r.hours;
    o.usdPerHour = usdPerHour;
    o.costUsd = r.costKnown ? r.costUsd : 0;
    o.notes = notes;
    o.trainer = tunebenchTrainerSupport(gpu, model);
    o.input = candidate;
    return o;
}

// Every node count of one strategy on one VM size: the options that fit and
// keep to the budgets, the rest rejected with their reason.
void sweepStrategy(const VmSize& vm, const GpuSpec& gpu, const VmScreen& screen, Sharding strategy,
    const model::ModelSpec& model, const RecommendOptions& options, Recommendation& rec,
    Rejections& rejections)
{
    const int swept = std::max(kSweptNodes, 1);
    PlanInput candidate = screen.base;
    candidate.sharding = strategy;
    // How FSDP is driven (docs/PLANNER.md 4.17) says nothing of ZeRO or DDP:
    // those candidates are planned without it, not refused for it.
    if (!isFsdp(strategy))
        candidate.fsdp.noSync = candidate.fsdp.adaptersInLayerUnits = false;
    if (common::Status valid = validatePlanInput(candidate); !valid) {
        rejections.addVm(vm, {strategy}, std::max(1, std::min(options.maxNodes, swept)),
            RejectReason::InvalidCombination, valid.error().message);
        return;
    }
    for (int nodes = 1; nodes <= swept; ++nodes) {
        if (const auto why = pointless(vm, strategy, nodes, options)) {
            rejections.add(vm, strategy, nodes, why->first, why->second);
            continue;
        }
        candidate.nodes = nodes;
        const PlanResult r = estimatePlan(candidate, model, gpu, &vm, EstimateOptions{false});
        ++rec.evaluated;
        if (!r.fits) {
            rejections.add(vm, strategy, nodes, RejectReason::DoesNotFit, fitDetail(r), &r);
            continue;
        }
        const double usdPerHour = vm.usdPerHour ? *vm.usdPerHour * nodes : 0;
        if (const auto over = overBudget(r, usdPerHour, options)) {
            rejections.add(vm, strategy, nodes, RejectReason::OverBudget, *over);
            continue;
        }
        rec.options.push_back(optionOf(vm, gpu, model, candidate, r, usdPerHour, screen.notes));
    }
}

// Costs and times within 1% of each other are a tie (the model is not that
// precise): then fewer nodes, then the other criterion, win.
void rank(std::vector<RecommendedOption>& options, RankBy by)
{
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
    if (by == RankBy::Time)
        std::stable_sort(options.begin(), options.end(), byTime);
    else
        std::stable_sort(options.begin(), options.end(), byCost);
}

} // namespace

Recommendation recommend(const PlanInput& input, const model::ModelSpec& model,
    const Catalog& catalog, const RecommendOptions& options, const ProgressHook& progress)
{
    Recommendation rec;
    Rejections rejections(rec.rejected);
    // The Hugging Face Trainer plan is DDP's; its ZeRO and FSDP are the
    // reference engine's plans, not alternatives of this one.
    const std::vector<Sharding> strategies = !options.strategies.empty() ? options.strategies
        : input.engine == Engine::HfTrainer
        ? std::vector<Sharding>{Sharding::Ddp}
        : std::vector<Sharding>(kAllStrategies.begin(), kAllStrategies.end());
    const int total = int(catalog.vms().size());
    int done = 0;
    for (const VmSize& vm : catalog.vms()) {
        if (const GpuSpec* gpu = catalog.findGpu(vm.gpuId)) {
            const VmScreen screen = screenVm(vm, *gpu, input, model, options);
            if (!screen.problem.empty())
                rejections.addVm(vm, strategies,
                    std::max(1, std::min(options.maxNodes, std::max(kSweptNodes, 1))),
                    screen.reason, screen.problem);
            else
                for (const Sharding strategy : strategies)
                    sweepStrategy(vm, *gpu, screen, strategy, model, options, rec, rejections);
        }
        ++done;
        if (progress && !progress(done, total)) {
            rec.cancelled = true;
            break;
        }
    }
    rank(rec.options, options.rankBy);
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
