#include "plan/estimator.h"

#include "plan/catalog.h"
#include "plan/cpu_device.h"
#include "plan/plan_context.h"
#include "plan/trainer_support.h"

#include "model/family_parts.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <string>

namespace tb::plan {

PlanResult estimatePlan(const PlanInput& input, const model::ModelSpec& model, const GpuSpec& gpu,
    const VmSize* vm, const EstimateOptions& options)
{
    PlanResult r;
    r.memory.reserve(16);
    if (options.explain)
        r.figures.reserve(16);
    const detail::PlanContext ctx = detail::makeContext(input, model, gpu, vm, options.explain);
    r.paramsTotal = ctx.counts.total;
    r.paramsTrainable = std::llround(ctx.trainable);
    r.modelName = model.name;
    r.gpuId = gpu.id;
    r.vmSize = vm ? vm->name : std::string();
    r.gpusPerNode = ctx.gpusPerNode;
    r.nodes = ctx.nodes;
    r.worldSize = ctx.world;
    r.precision = std::string(toString(ctx.precision));
    r.calibration = input.calibrationNote;
    if (options.explain) {
        r.warnings = model.warnings;
        if (const TrainerSupport trainer = tunebenchTrainerSupport(model); !trainer.runs)
            r.warnings.push_back("Tunebench's trainer cannot run " + model.name + " ("
                + trainer.reason + "): planned as transformers and peft run it");
        for (const std::string& name : ctx.unknownTargets)
            r.warnings.push_back(
                "lora target '" + name + "' is not a linear layer of " + model.name);
        if (vm && vm->fractionalGpu)
            r.warnings.push_back(vm->name
                + " is a vGPU slice for graphics; planned with its share of the GPU's memory");
        if (vm && vm->status != "ga")
            r.warnings.push_back(vm->name + " is " + vm->status + ": " + vm->statusNote);
        if (input.gpusPerNode > 0 && vm && input.gpusPerNode > vm->gpusPerVm)
            r.warnings.push_back("gpus_per_node " + std::to_string(input.gpusPerNode)
                + " is more than " + vm->name + " has; planned with "
                + std::to_string(vm->gpusPerVm));
        if (ctx.world == 1 && input.sharding != Sharding::Ddp)
            r.warnings.push_back(std::string(label(input.sharding)) + " on one GPU shards nothing");
        if (model::attentionSinksPerLayer(model) > 0 && input.attention == Attention::Sdpa)
            r.warnings.push_back("transformers runs " + model.name
                + " without SDPA, which has no attention sinks: attention sdpa is planned as "
                  "a fused kernel with them (flex attention, kernels-community/vllm-flash-attn3) "
                  "that stores no scores; attention eager plans the stored scores");
        if (ctx.mxfp4 > 0)
            r.warnings.push_back("LoRA is planned on the attention projections of " + model.name
                + " only: its experts stay frozen in MXFP4 (mxfp4_experts: stored); "
                  "mxfp4_experts: upcast lets them train or take LoRA");
        else if (ctx.lora && model.isMixtureOfExperts() && input.lora.targetParameters.empty())
            r.warnings.push_back("LoRA is planned on the attention projections of " + model.name
                + " only: its experts are not adapted (gate_proj, up_proj and down_proj select "
                  "nothing); lora.target_parameters (mlp.experts.gate_up_proj, "
                  "mlp.experts.down_proj) adapts them, as peft and Tunebench's trainer do");
    }
    detail::computeMemory(ctx, r);
    detail::computeThroughput(ctx, r);
    return r;
}

namespace {

// Every lora.target_parameters name selects an expert weight of `model`.
common::Status validateExpertTargets(const PlanInput& input, const model::ModelSpec& model)
{
    if (input.lora.targetParameters.empty())
        return common::Ok{};
    if (!model.isMixtureOfExperts())
        return common::Error{"lora.target_parameters: " + model.name
                + " has no experts to adapt (got " + input.lora.targetParameters.front() + ")",
            "target_parameters adapts the experts of a mixture of experts; lora.target_modules "
            "names the linear layers"};
    std::vector<std::string> unknown;
    detail::expertLoraParams(model, input.lora, nullptr, &unknown);
    if (unknown.empty())
        return common::Ok{};
    return common::Error{"lora.target_parameters: '" + unknown.front()
            + "' selects no expert weight of " + model.name,
        "expected mlp.experts.gate_up_proj or mlp.experts.down_proj (peft's "
        "target_parameters names)"};
}

// MXFP4 experts as stored are frozen 4-bit codes: nothing trains them and
// nothing else quantises them; upcast applies only where they are MXFP4.
common::Status validateMxfp4Experts(const PlanInput& input, const model::ModelSpec& model)
{
    if (!model::expertsPublishedInMxfp4(model)) {
        if (input.mxfp4Experts == Mxfp4Experts::Upcast)
            return common::Error{
                "mxfp4_experts: upcast, but " + model.name + " publishes no experts in MXFP4",
                "expected stored (the default): upcast applies to gpt-oss's experts"};
        return common::Ok{};
    }
    if (input.mxfp4Experts == Mxfp4Experts::Upcast)
        return common::Ok{};
    const std::string why = " keeps " + model.name + "'s experts frozen in MXFP4";
    const char* hint = "set mxfp4_experts: upcast to hold the experts in the compute dtype";
    if (input.method == Method::Full)
        return common::Error{"method: full, but mxfp4_experts: stored" + why, hint};
    if (input.method == Method::Qlora)
        return common::Error{
            "method: qlora, but mxfp4_experts: stored" + why + " (no second quantisation)", hint};
    if (!input.lora.targetParameters.empty())
        return common::Error{"lora.target_parameters: " + input.lora.targetParameters.front()
                + ", but mxfp4_experts: stored" + why + " (peft adapts no MXFP4 weight)",
            hint};
    return common::Ok{};
}

} // namespace

common::Status validateForModel(const PlanInput& input, const model::ModelSpec& model)
{
    if (const TrainerSupport trainer = tunebenchTrainerSupport(model);
        input.engine == Engine::Tunebench && !trainer.runs)
        return common::Error{"engine: tunebench, but Tunebench's trainer cannot run " + model.name
                + " (" + trainer.reason + ")",
            "plan " + model.name + " with engine reference or hf-trainer"};
    if (auto status = validateMxfp4Experts(input, model); !status)
        return status;
    if (input.method == Method::Full)
        return common::Ok{};
    if (auto status = validateExpertTargets(input, model); !status)
        return status;
    std::vector<std::string> unknown;
    detail::loraParamsPerLayer(model, input.lora, nullptr, &unknown);
    if (unknown.empty())
        return common::Ok{};
    std::string valid;
    for (const model::LinearLayer& layer : model::blockLinearLayers(model))
        valid += (valid.empty() ? "" : ", ") + layer.name;
    std::string names;
    for (const std::string& name : unknown)
        names += (names.empty() ? "'" : ", '") + name + "'";
    return common::Error{"lora.target_modules: " + names + " not in " + model.name + "'s blocks",
        "expected some of: " + valid + " (or all-linear)"};
}

namespace {

// Built once this CPU's rate is accepted; a refused rate is the plan's
// error, and the next plan measures again.
common::Result<const GpuSpec*> thisCpuDevice()
{
    static std::mutex mutex;
    static std::optional<GpuSpec> device;
    const std::lock_guard lock(mutex);
    if (!device) {
        const common::Result<CpuFacts> facts = thisCpu();
        if (!facts)
            return common::Error{"gpu: " + std::string(kCpuDeviceId) + ": " + facts.error().message,
                facts.error().hint};
        device = cpuDevice(*facts);
    }
    return &*device;
}

// The catalog's GPU, or this machine's CPU for "cpu"; nullptr when unknown.
common::Result<const GpuSpec*> findDevice(const std::string& id, const Catalog& catalog)
{
    if (id == kCpuDeviceId)
        return thisCpuDevice();
    return catalog.findGpu(id);
}

} // namespace

common::Result<ResolvedHardware> resolveHardware(const PlanInput& input, const Catalog& catalog)
{
    ResolvedHardware hw;
    if (!input.vmSize.empty()) {
        hw.vm = catalog.findVm(input.vmSize);
        if (!hw.vm) {
            std::string hint;
            for (const std::string& name : catalog.suggestVms(input.vmSize))
                hint += (hint.empty() ? "did you mean " : ", ") + name;
            return common::Error{"vm_size: unknown Azure VM size '" + input.vmSize + "'",
                hint + (hint.empty() ? "" : "?")};
        }
        hw.gpu = catalog.findGpu(hw.vm->gpuId);
    }
    if (!input.gpu.empty()) {
        const common::Result<const GpuSpec*> found = findDevice(input.gpu, catalog);
        if (!found)
            return found.error();
        const GpuSpec* gpu = *found;
        if (!gpu) {
            std::string hint;
            for (const std::string& name : catalog.suggestGpus(input.gpu))
                hint += (hint.empty() ? "did you mean " : ", ") + name;
            return common::Error{
                "gpu: unknown GPU '" + input.gpu + "'", hint + (hint.empty() ? "" : "?")};
        }
        if (hw.vm && gpu != hw.gpu)
            return common::Error{
                "gpu: '" + input.gpu + "' but " + hw.vm->name + " has " + hw.vm->gpuId,
                "leave gpu empty when vm_size is given"};
        hw.gpu = gpu;
    }
    if (!hw.gpu)
        return common::Error{"plan: give vm_size or gpu", {}};
    if (hw.vm && input.gpusPerNode > hw.vm->gpusPerVm)
        return common::Error{"gpus_per_node: got " + std::to_string(input.gpusPerNode) + ", but "
                + hw.vm->name + " has " + std::to_string(hw.vm->gpusPerVm) + " GPU(s)",
            "use more nodes, or a larger VM size"};
    return hw;
}

common::Result<PlanResult> planFromCatalog(
    const PlanInput& input, const Catalog& catalog, const EstimateOptions& options)
{
    if (common::Status valid = validatePlanInput(input); !valid)
        return valid.error();
    common::Result<model::ModelSpec> model = catalog.resolveModel(input.model);
    if (!model)
        return model.error();
    if (common::Status valid = validateForModel(input, *model); !valid)
        return valid.error();
    common::Result<ResolvedHardware> hw = resolveHardware(input, catalog);
    if (!hw)
        return hw.error();
    return estimatePlan(input, *model, *hw->gpu, hw->vm, options);
}

namespace {

bool applyAxis(PlanInput& in, const VmSize* vm, SweepAxis axis, long long value)
{
    if (value < 1 || value > (1 << 24))
        return false;
    switch (axis) {
    case SweepAxis::MicroBatch:
        in.microBatch = int(value);
        return true;
    case SweepAxis::SeqLen:
        in.seqLen = int(value);
        return true;
    case SweepAxis::GpuCount: {
        const int perVm = vm ? std::max(1, vm->gpusPerVm) : int(std::min<long long>(value, 1024));
        if (value <= perVm) {
            in.gpusPerNode = int(value);
            in.nodes = 1;
        } else if (value % perVm == 0 && value / perVm <= 4096) {
            in.gpusPerNode = perVm;
            in.nodes = int(value / perVm);
        } else {
            return false;
        }
        return true;
    }
    }
    return false;
}

} // namespace

std::vector<SweepPoint> sweepPlan(const PlanInput& input, const model::ModelSpec& model,
    const GpuSpec& gpu, const VmSize* vm, SweepAxis axis, const std::vector<long long>& values)
{
    std::vector<SweepPoint> points;
    points.reserve(values.size());
    const EstimateOptions quiet{false};
    for (long long value : values) {
        PlanInput in = input;
        if (!applyAxis(in, vm, axis, value))
            continue;
        const PlanResult r = estimatePlan(in, model, gpu, vm, quiet);
        SweepPoint& p = points.emplace_back();
        p.value = value;
        p.perGpuBytes = r.perGpuBytes;
        for (int c = 0; c < kMemoryCategoryCount; ++c)
            p.categoryBytes[c] = r.categoryBytes(MemoryCategory(c));
        p.usableBytes = r.usableBytes;
        p.fits = r.fits;
        p.tokensPerSecond = r.tokensPerSecond;
        p.stepSeconds = r.stepSeconds;
    }
    return points;
}

std::optional<int> largestFittingMicroBatch(const PlanInput& input, const model::ModelSpec& model,
    const GpuSpec& gpu, const VmSize* vm, int limit)
{
    const EstimateOptions quiet{false};
    const auto fits = [&](int micro) {
        PlanInput in = input;
        in.microBatch = micro;
        return estimatePlan(in, model, gpu, vm, quiet).fits;
    };
    limit = std::clamp(limit, 1, 65536);
    if (!fits(1))
        return std::nullopt;
    // Memory grows with the micro-batch, so the fitting ones form a prefix.
    int low = 1, high = limit;
    while (low < high) {
        const int mid = low + (high - low + 1) / 2;
        if (fits(mid))
            low = mid;
        else
            high = mid - 1;
    }
    return low;
}

std::vector<ScalingPoint> scalingCurve(const PlanInput& input, const model::ModelSpec& model,
    const GpuSpec& gpu, const VmSize* vm, int maxNodes)
{
    std::vector<ScalingPoint> points;
    const EstimateOptions quiet{false};
    double single = 0;
    maxNodes = std::clamp(maxNodes, 1, 4096);
    for (int nodes = 1; nodes <= maxNodes; ++nodes) {
        PlanInput in = input;
        in.nodes = nodes;
        const PlanResult r = estimatePlan(in, model, gpu, vm, quiet);
        if (nodes == 1)
            single = r.tokensPerSecond;
        ScalingPoint& p = points.emplace_back();
        p.nodes = nodes;
        p.tokensPerSecond = r.tokensPerSecond;
        p.efficiency = single > 0 ? r.tokensPerSecond / (nodes * single) : 0;
        p.fits = r.fits;
    }
    return points;
}

} // namespace tb::plan
