#include "plan/plan_json.h"

#include <cmath>

namespace tb::plan {

using nlohmann::json;

namespace {

// Bytes are whole numbers in JSON; the model computes them in double.
long long wholeBytes(double bytes)
{
    return std::isfinite(bytes) ? std::llround(bytes) : 0;
}

double finite(double value)
{
    return std::isfinite(value) ? value : 0.0;
}

} // namespace

json planResultToJson(const PlanInput& input, const PlanResult& r)
{
    json out;
    out["schema"] = "tunebench.plan/1";
    out["model"] = r.modelName;
    out["method"] = toString(input.method);
    out["double_quant"] = input.method == Method::Qlora ? json(input.doubleQuant) : json(nullptr);
    out["objective"] = toString(input.objective);
    out["mxfp4_experts"] = toString(input.mxfp4Experts);
    out["precision"] = r.precision;
    out["optimizer"] = toString(input.optimizer);
    out["optimizer_kernel"] = toString(input.optimizerKernel);
    out["sharding"] = toString(input.sharding);
    out["offload"] = toString(input.offload);
    out["engine"] = toString(input.engine);
    out["gpu"] = r.gpuId;
    out["vm_size"] = r.vmSize.empty() ? json(nullptr) : json(r.vmSize);
    out["gpus_per_node"] = r.gpusPerNode;
    out["nodes"] = r.nodes;
    out["world_size"] = r.worldSize;
    out["micro_batch"] = input.microBatch;
    out["seq_len"] = input.seqLen;
    out["grad_accum"] = input.gradAccum;
    if (input.data.measured()) {
        const DataProfile& d = input.data;
        out["data"] = {{"source", d.source}, {"rows", d.rows}, {"tokens", d.tokens},
            {"batch_tokens", d.batchTokens}, {"micro_batches", d.microBatches},
            {"longest_row", d.longestRow}, {"peak_loss_tokens", d.peakLossTokens}};
    } else {
        out["data"] = nullptr;
    }
    out["params_total"] = r.paramsTotal;
    out["params_trainable"] = r.paramsTrainable;
    out["calibration"] = r.calibration.empty() ? json(nullptr) : json(r.calibration);

    json perGpu = json::object();
    for (int c = 0; c < kMemoryCategoryCount; ++c)
        perGpu[std::string(categoryKey(MemoryCategory(c)))] =
            wholeBytes(r.categoryBytes(MemoryCategory(c)));
    for (PeakLevel level : {PeakLevel::Allocated, PeakLevel::Reserved, PeakLevel::Device})
        perGpu[std::string(peakKey(level))] = wholeBytes(r.peaks.at(level));
    perGpu["total"] = wholeBytes(r.perGpuBytes);
    out["per_gpu_bytes"] = perGpu;
    json components = json::array();
    for (const MemoryComponent& m : r.memory)
        components.push_back({{"key", m.key}, {"category", categoryKey(m.category)},
            {"peak", peakKey(peakLevel(m.key))}, {"label", m.label}, {"bytes", wholeBytes(m.bytes)},
            {"explanation", m.explanation}, {"source", m.source}});
    out["components"] = components;
    json phases = json::array();
    for (const PhasePeak& p : r.phases)
        phases.push_back({{"phase", phaseKey(p.phase)}, {"bytes", wholeBytes(p.bytes)},
            {"allocated", wholeBytes(p.allocated)}, {"explanation", p.explanation}});
    out["phases"] = phases;
    out["optimizer_temporary_bytes"] = wholeBytes(r.optimizerTemporaryBytes);
    out["peak_phase"] = r.peakPhase() ? json(phaseKey(r.peakPhase()->phase)) : json(nullptr);
    out["fits"] = r.fits;
    out["gpu_usable_bytes"] = wholeBytes(r.usableBytes);
    out["headroom_bytes"] = wholeBytes(r.headroomBytes);
    out["model_states_bytes"] = wholeBytes(r.modelStatesBytes);
    out["cpu_offload_bytes_per_node"] = wholeBytes(r.cpuBytesPerNode);
    out["load_host_bytes_per_node"] = wholeBytes(r.loadHostBytesPerNode);
    out["disk"] = {{"checkpoint_bytes", wholeBytes(r.checkpointDiskBytes)},
        {"export_bytes", wholeBytes(r.exportDiskBytes)}, {"explanation", r.diskExplanation}};

    out["tokens_per_second"] = finite(r.tokensPerSecond);
    out["samples_per_second"] = finite(r.samplesPerSecond);
    out["step_seconds"] = finite(r.stepSeconds);
    out["flops_per_token"] = finite(r.flopsPerToken);
    out["training_tokens"] = finite(r.trainingTokens);
    out["optimizer_steps"] = finite(r.optimizerSteps);
    out["hours"] = finite(r.hours);
    out["cost_usd"] = r.costKnown ? json(finite(r.costUsd)) : json(nullptr);
    json figures = json::array();
    for (const Figure& f : r.figures)
        figures.push_back({{"key", f.key}, {"label", f.label}, {"value", finite(f.value)},
            {"unit", f.unit}, {"explanation", f.explanation}, {"source", f.source}});
    out["figures"] = figures;
    out["warnings"] = r.warnings;
    return out;
}

json recommendationToJson(const Recommendation& rec)
{
    json options = json::array();
    for (const RecommendedOption& o : rec.options)
        options.push_back({{"vm_size", o.vmSize}, {"gpu", o.gpuId}, {"nodes", o.nodes},
            {"gpus_per_node", o.gpusPerNode}, {"gpus_total", o.gpusTotal},
            {"strategy", toString(o.strategy)}, {"precision", toString(o.precision)},
            {"fits", o.fits}, {"per_gpu_total_bytes", wholeBytes(o.perGpuBytes)},
            {"gpu_usable_bytes", wholeBytes(o.usableBytes)},
            {"tokens_per_second", finite(o.tokensPerSecond)}, {"hours", finite(o.hours)},
            {"usd_per_hour", finite(o.usdPerHour)}, {"cost_usd", finite(o.costUsd)},
            {"notes", o.notes}, {"tunebench_trainer", o.trainer.runs},
            {"tunebench_trainer_reason", o.trainer.reason}});
    json rejected = json::array();
    for (const RejectedOption& r : rec.rejected)
        rejected.push_back(
            {{"vm_size", r.vmSize}, {"strategy", toString(r.strategy)}, {"nodes_from", r.nodesFrom},
                {"nodes_to", r.nodesTo}, {"reason", toString(r.reason)}, {"detail", r.detail}});
    return {{"options", options}, {"rejected", rejected}, {"evaluated", rec.evaluated},
        {"cancelled", rec.cancelled}};
}

} // namespace tb::plan
