#include "launch/run_plan.h"

#include "config/config_loader.h"
#include "metrics/event_file_reader.h"
#include "metrics/step_record.h"

#include <algorithm>

namespace tb::launch {

namespace {

using common::Error;

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values.empty() ? -1 : values[values.size() / 2];
}

struct RunEvents {
    std::optional<metrics::Event> start;
    std::vector<metrics::StepRecord> steps;
};

common::Result<RunEvents> readEvents(const std::string& path)
{
    metrics::EventFileReader reader(path);
    RunEvents events;
    do {
        common::Result<std::vector<metrics::StreamItem>> items = reader.poll();
        if (!items)
            return items.error();
        for (const metrics::StreamItem& item : *items) {
            if (!item.event || item.event->rank != 0)
                continue;
            if (item.event->type == metrics::EventType::RunStart && !events.start)
                events.start = item.event;
            else if (item.event->type == metrics::EventType::Step)
                events.steps.push_back(metrics::StepRecord::fromEvent(*item.event));
        }
    } while (reader.moreAvailable());
    return events;
}

void foldSteps(const std::vector<metrics::StepRecord>& steps, RunMeasurement& m)
{
    std::vector<double> rates;
    for (size_t i = 0; i < steps.size(); ++i) {
        const metrics::StepRecord& s = steps[i];
        if (i > 0 && s.tokensPerSecond > 0)
            rates.push_back(s.tokensPerSecond);
        double& peak = m.onCpu ? m.peakResidentBytes : m.peakAllocatedBytes;
        peak = std::max(peak, double(s.memPeakBytes));
        m.peakReservedBytes = std::max(m.peakReservedBytes, double(s.memPeakReservedBytes));
    }
    m.steps = int(steps.size());
    m.tokensPerSecond = median(rates);
}

} // namespace

plan::PlanInput planInputOfRun(
    const config::RunConfig& c, int worldSize, int nodes, const std::string& gpuId)
{
    plan::PlanInput in;
    in.model = c.model;
    in.method = c.method;
    in.lora.rank = c.lora.rank;
    in.lora.alpha = c.lora.alpha;
    in.lora.dropout = c.lora.dropout;
    in.lora.targetModules = c.lora.targetModules;
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

common::Result<RunMeasurement> readRunMeasurement(
    const std::string& runDir, const std::string& gpuId, const std::string& modelOverride)
{
    const std::string path = runDir + "/events.jsonl";
    common::Result<RunEvents> events = readEvents(path);
    if (!events)
        return events.error();
    if (!events->start)
        return Error::at(path, {}, "no run_start event of rank 0: not a run folder, or not started");
    const nlohmann::json& start = events->start->body;
    config::LoadOptions options;
    options.sourceName = path + " (run_start.config)";
    const config::LoadReport report = config::parseRunConfig(start.at("config").dump(), options);
    if (!report.ok())
        return report.error();
    RunMeasurement m;
    m.runDir = runDir;
    m.runId = start.value("run_id", std::string());
    m.onCpu = report.config->device == config::Device::Cpu;
    if (!m.onCpu && gpuId.empty())
        return Error::at(path, "run_start.device",
            "the run ran on " + start.value("device", std::string("a GPU"))
                + ", which names no GPU model; give the GPU (--gpu)");
    m.input = planInputOfRun(*report.config, start.at("world_size").get<int>(),
        start.value("nodes", 1), m.onCpu ? "cpu" : gpuId);
    if (!modelOverride.empty())
        m.input.model = modelOverride;
    if (events->steps.empty())
        return Error::at(path, {}, "no step events of rank 0: nothing measured");
    foldSteps(events->steps, m);
    return m;
}

} // namespace tb::launch
