#include "launch/run_plan.h"

#include "config/config_loader.h"
#include "metrics/run_catalog.h"
#include "metrics/run_figures.h"

#include <algorithm>

namespace tb::launch {

using common::Error;

plan::PlanInput planInputOfRun(
    const config::RunConfig& c, int worldSize, int nodes, const std::string& gpuId)
{
    plan::PlanInput in;
    in.model = c.model;
    in.method = c.method;
    in.objective = c.objective;
    in.lora.rank = c.lora.rank;
    in.lora.alpha = c.lora.alpha;
    in.lora.dropout = c.lora.dropout;
    in.lora.targetModules = c.lora.targetModules;
    in.lora.targetParameters = c.lora.targetParameters;
    in.precision = c.precision;
    in.optimizer = plan::Optimizer::AdamW;
    in.sharding = c.distributed.sharding;
    in.offload = c.distributed.offload;
    in.gradientCheckpointing = c.activationCheckpointing;
    in.microBatch = c.training.microBatch;
    in.gradAccum = c.training.gradAccum;
    in.seqLen = c.data.sequenceLength;
    in.packing = c.data.packing;
    in.nodes = std::max(1, nodes);
    in.gpusPerNode = std::max(1, worldSize / in.nodes);
    in.vmSize.clear();
    in.gpu = gpuId;
    in.engine = plan::Engine::Tunebench; // a run of our own trainer
    return in;
}

namespace {

// A run config's device auto (every recipe's) ran where LibTorch saw a GPU:
// its recorded prediction says which, on a GPU preset or on this CPU.
bool ranOnCpu(config::Device device, const metrics::RunStartInfo& start)
{
    if (device != config::Device::Auto)
        return device == config::Device::Cpu;
    return start.prediction && start.prediction->gpu.empty();
}

} // namespace

common::Result<RunMeasurement> readRunMeasurement(
    const std::string& runDir, const std::string& gpuId, const std::string& modelOverride)
{
    const std::string path = runDir + "/" + metrics::kRank0EventsFile;
    common::Result<metrics::RunHistory> history = metrics::readRunHistory(path);
    if (!history)
        return history.error();
    if (!history->start())
        return Error::at(
            path, {}, "no run_start event of rank 0: not a run folder, or not started");
    const metrics::RunStartInfo& start = *history->start();
    config::LoadOptions options;
    options.sourceName = path + " (run_start.config)";
    const config::LoadReport report = config::parseRunConfig(start.config.dump(), options);
    if (!report.ok())
        return report.error();
    RunMeasurement m;
    m.runDir = runDir;
    m.runId = start.runId;
    m.onCpu = ranOnCpu(report.config->device, start);
    // A GPU run names its GPU's preset in its prediction; --gpu overrides it.
    const std::string recorded = start.prediction ? start.prediction->gpu : std::string();
    const std::string gpu = gpuId.empty() ? recorded : gpuId;
    if (!m.onCpu && gpu.empty())
        return Error::at(path, "run_start.prediction.gpu",
            "the run ran on " + std::string(config::toString(report.config->device))
                + " and names no GPU preset; give the GPU (--gpu)");
    m.input = planInputOfRun(*report.config, start.worldSize, start.nodes, m.onCpu ? "cpu" : gpu);
    if (!modelOverride.empty())
        m.input.model = modelOverride;
    const std::vector<metrics::StepRecord>& steps = history->steps();
    if (steps.empty())
        return Error::at(path, {}, "no step events of rank 0: nothing measured");
    m.steps = int(steps.size());
    m.tokensPerSecond = metrics::steadyTokensPerSecond(steps);
    (m.onCpu ? m.peakResidentBytes : m.peakAllocatedBytes) = double(metrics::peakBytes(steps));
    m.peakReservedBytes = double(metrics::peakReservedBytes(steps));
    return m;
}

} // namespace tb::launch
