#include "launch/run_prediction.h"

#include "common/units.h"
#include "launch/run_plan.h"
#include "model/hf_config.h"
#include "plan/cpu_device.h"
#include "plan/estimator.h"

namespace tb::launch {

namespace {

std::string describeCpu(const plan::CpuFacts& facts)
{
    std::string text = "CPU: " + std::to_string(facts.cores) + " cores, "
        + common::formatBytes(facts.memoryBytes) + ", " + common::formatFixed(facts.matmulGflops, 1)
        + " GFLOP/s fp32 GEMM measured";
    return facts.model.empty() ? text : text + " (" + facts.model + ")";
}

} // namespace

common::Result<metrics::RunPrediction> predictCpuRun(
    const config::RunConfig& config, int ranksPerNode, int nodes)
{
    const plan::PlanInput input = planInputOfRun(config, ranksPerNode * nodes, nodes, plan::kCpuDeviceId);
    if (common::Status valid = plan::validatePlanInput(input); !valid)
        return valid.error();
    const common::Result<model::ModelSpec> model = model::readHfConfig(config.model);
    if (!model)
        return model.error();
    if (common::Status valid = plan::validateForModel(input, *model); !valid)
        return valid.error();
    const common::Result<plan::CpuFacts> cpu = plan::thisCpu();
    if (!cpu)
        return cpu.error();
    plan::EstimateOptions options;
    options.explain = false;
    const plan::PlanResult result =
        plan::estimatePlan(input, *model, plan::cpuDevice(*cpu), nullptr, options);
    metrics::RunPrediction prediction;
    prediction.device = describeCpu(*cpu);
    prediction.peakBytesPerRank = static_cast<int64_t>(result.peaks.deviceUsed);
    for (const plan::PhasePeak& phase : result.phases) {
        const auto bytes = static_cast<int64_t>(phase.bytes);
        if (phase.phase == plan::Phase::Load)
            prediction.loadBytesPerRank = bytes;
        else if (phase.phase == plan::Phase::Checkpoint)
            prediction.checkpointBytesPerRank = bytes;
        else if (phase.phase == plan::Phase::Export)
            prediction.exportBytesPerRank = bytes;
    }
    prediction.tokensPerSecond = result.tokensPerSecond;
    prediction.stepSeconds = result.stepSeconds;
    return prediction;
}

} // namespace tb::launch
