#include "launch/run_prediction.h"

#include "common/units.h"
#include "launch/run_data_profile.h"
#include "launch/run_plan.h"
#include "model/hf_config.h"
#include "plan/catalog.h"
#include "plan/cpu_device.h"
#include "plan/estimator.h"

namespace tb::launch {

using common::Error;

namespace {

std::string describeCpu(const plan::CpuFacts& facts)
{
    std::string text = "CPU: " + std::to_string(facts.cores) + " cores, "
        + common::formatBytes(facts.memoryBytes) + ", " + common::formatFixed(facts.matmulGflops, 1)
        + " GFLOP/s fp32 GEMM measured";
    return facts.model.empty() ? text : text + " (" + facts.model + ")";
}

metrics::RunPrediction predictionOf(const plan::PlanResult& result, bool onCpu)
{
    metrics::RunPrediction prediction;
    prediction.peakMeasure =
        onCpu ? metrics::PeakMeasure::Resident : metrics::PeakMeasure::Allocated;
    // A GPU run measures by torch.cuda.max_memory_allocated, which never
    // sees what lies outside the caching allocator (the CUDA context, NCCL);
    // a CPU run's resident memory holds everything. A step's measured peak
    // spans forward, backward and the optimizer's update.
    const auto measured = [onCpu](const plan::PhasePeak& phase) {
        return static_cast<int64_t>(onCpu ? phase.bytes : phase.allocated);
    };
    prediction.peakBytesPerRank = static_cast<int64_t>(
        result.stepPeakAt(onCpu ? plan::PeakLevel::Device : plan::PeakLevel::Allocated));
    for (const plan::PhasePeak& phase : result.phases) {
        if (phase.phase == plan::Phase::Load)
            prediction.loadBytesPerRank = measured(phase);
        else if (phase.phase == plan::Phase::Checkpoint)
            prediction.checkpointBytesPerRank = measured(phase);
        else if (phase.phase == plan::Phase::Export)
            prediction.exportBytesPerRank = measured(phase);
    }
    prediction.tokensPerSecond = result.tokensPerSecond;
    prediction.stepSeconds = result.stepSeconds;
    return prediction;
}

} // namespace

common::Result<std::string> gpuPresetOfDevice(const std::string& cudaDeviceName)
{
    if (cudaDeviceName.empty())
        return Error{"the CUDA driver did not say which GPU this is (cuDeviceGetName)", {}};
    const common::Result<plan::Catalog> catalog = plan::Catalog::loadDefault();
    if (!catalog)
        return catalog.error();
    if (const plan::GpuSpec* gpu = catalog->findGpuByDeviceName(cudaDeviceName))
        return gpu->id;
    return Error::at(catalog->presetsDir() + "/hardware/gpus.yaml", "device_names",
        "no GPU preset is called '" + cudaDeviceName + "', the name CUDA gives this run's GPU",
        "add the name to its preset's device_names, or a preset for this GPU");
}

common::Result<metrics::RunPrediction> predictRun(const config::RunConfig& config, int ranksPerNode,
    int nodes, const std::string& deviceId, plan::DataProfile data)
{
    plan::PlanInput input = planInputOfRun(config, ranksPerNode * nodes, nodes, deviceId);
    if (data.measured())
        applyDataProfile(input, config, std::move(data));
    if (common::Status valid = plan::validatePlanInput(input); !valid)
        return valid.error();
    const common::Result<model::ModelSpec> model = model::readHfConfig(config.model);
    if (!model)
        return model.error();
    if (common::Status valid = plan::validateForModel(input, *model); !valid)
        return valid.error();
    plan::EstimateOptions options;
    options.explain = false;
    if (deviceId == plan::kCpuDeviceId) {
        const common::Result<plan::CpuFacts> cpu = plan::thisCpu();
        if (!cpu)
            return cpu.error();
        metrics::RunPrediction prediction = predictionOf(
            plan::estimatePlan(input, *model, plan::cpuDevice(*cpu), nullptr, options), true);
        prediction.device = describeCpu(*cpu);
        return prediction;
    }
    const common::Result<plan::Catalog> catalog = plan::Catalog::loadDefault();
    if (!catalog)
        return catalog.error();
    const plan::GpuSpec* gpu = catalog->findGpu(deviceId);
    if (!gpu)
        return Error::at(
            catalog->presetsDir() + "/hardware/gpus.yaml", deviceId, "no such GPU preset");
    metrics::RunPrediction prediction =
        predictionOf(plan::estimatePlan(input, *model, *gpu, nullptr, options), false);
    prediction.device = gpu->name;
    prediction.gpu = gpu->id;
    return prediction;
}

} // namespace tb::launch
