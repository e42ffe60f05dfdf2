#include "launch/export_job.h"

#include "plan/estimator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace tb::launch {

namespace {

namespace fs = std::filesystem;

std::string baseName(std::string path)
{
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    std::string name = fs::path(path).filename().string();
    if (name == "config.json")
        name = fs::path(path).parent_path().filename().string();
    return name;
}

// Slurm and Azure ML both accept these characters in a job's name.
std::string sanitizeJobName(const std::string& text)
{
    std::string name;
    for (const char c : text) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
            || c == '-' || c == '_' || c == '.';
        name += keep ? c : '-';
    }
    if (name.size() > 64)
        name.resize(64);
    while (!name.empty() && (name.front() == '-' || name.front() == '.'))
        name.erase(name.begin());
    return name.empty() ? "tunebench" : name;
}

std::string configPrecisionName(config::Precision precision)
{
    return precision == config::Precision::Fp32 ? "no" : "bf16";
}

common::Error planError(const std::string& planPath, const common::Error& error)
{
    return common::Error{
        (planPath.empty() ? std::string("plan") : planPath) + ": " + error.message, error.hint};
}

// The ranks shard as the run config says; the plan's strategy only sized
// the job, so a disagreement is noted and the config's is stated.
void takeConfigSharding(ExportJob& job, const config::RunConfig& cfg, bool havePlan)
{
    const std::string sharding(config::toString(cfg.distributed.sharding));
    const std::string offload(config::toString(cfg.distributed.offload));
    if (havePlan
        && (sharding != plan::toString(job.sharding) || offload != plan::toString(job.offload)))
        job.notes.push_back("sharding: the plan says " + std::string(plan::toString(job.sharding))
            + " (offload " + std::string(plan::toString(job.offload)) + "), the run config "
            + sharding + " (offload " + offload + "); the ranks run the run config's");
    job.sharding = plan::parseSharding(sharding).value_or(job.sharding);
    job.offload = plan::parseOffload(offload).value_or(job.offload);
}

// A plan is made for GPUs, so its job trains on them whatever the run
// config says; without a plan the run config's device decides.
void chooseDevice(ExportJob& job, const ExportSources& sources)
{
    const std::optional<config::Device> configured =
        sources.config ? std::optional(sources.config->device) : std::nullopt;
    job.onGpus = sources.plan || configured != config::Device::Cpu;
    if (sources.plan && configured && configured != config::Device::Cuda)
        job.notes.push_back("device: the run config says "
            + std::string(config::toString(*configured))
            + ", the plan is for GPUs; every rank gets --device cuda");
    if (!job.onGpus)
        job.notes.push_back("the run config trains on the CPU (device: cpu): "
            + std::to_string(job.gpusPerNode) + " process(es) per node, no GPUs asked for");
}

// What the trainer would stop on at its first step, refused before a job
// is queued for it (train/training_device.cpp, config/run_config.h).
common::Status checkTrainerSupports(const ExportJob& job, const ExportSources& sources)
{
    const std::string configName =
        sources.configPath.empty() ? std::string("run config") : sources.configPath;
    if (!job.onGpus && sources.config
        && sources.config->distributed.offload != config::Offload::None)
        return common::Error{configName + ": distributed.offload: "
                + std::string(config::toString(sources.config->distributed.offload))
                + " moves states from GPU memory to the CPU, but this job trains on the CPU "
                  "(device: cpu), where the trainer refuses it",
            "set distributed.offload: none, or device: cuda"};
    if (sources.plan && !sources.config && sources.plan->precision == plan::Precision::Fp16Mixed)
        return common::Error{(sources.planPath.empty() ? std::string("plan") : sources.planPath)
                + ": precision: fp16-mixed, which the trainer does not have (it trains in "
                  "fp32, bf16-mixed or bf16)",
            "plan with bf16-mixed, or give the run config (--config) the job trains"};
    return common::Ok{};
}

} // namespace

std::vector<std::string> ExportJob::trainerArguments() const
{
    if (onGpus)
        return {"--device", "cuda"};
    return {};
}

std::string mixedPrecisionName(plan::Precision precision)
{
    switch (precision) {
    case plan::Precision::Fp32:
        return "no";
    case plan::Precision::Fp16Mixed:
        return "fp16";
    case plan::Precision::Bf16Mixed:
    case plan::Precision::Bf16:
        return "bf16";
    }
    return "no";
}

common::Result<ExportJob> makeExportJob(
    const ExportSources& sources, const plan::Catalog* catalog, const ExportSettings& settings)
{
    if (!sources.plan && !sources.config)
        return common::Error{"export: nothing to export from",
            "give a plan (--plan FILE.yaml) and/or a run config (--config)"};
    ExportJob job;
    job.program = settings.program.empty() ? std::string("tunebench-cli") : settings.program;
    std::string defaultName = "tunebench";

    if (sources.plan) {
        const plan::PlanInput& in = *sources.plan;
        if (!catalog)
            return common::Error{
                "export: a plan needs the presets catalog to resolve " + in.vmSize, {}};
        const common::Result<plan::PlanResult> planned =
            plan::planFromCatalog(in, *catalog, plan::EstimateOptions{false});
        if (!planned)
            return planError(sources.planPath, planned.error());
        job.nodes = planned->nodes;
        job.gpusPerNode = planned->gpusPerNode;
        job.vmSize = planned->vmSize;
        job.gpu = planned->gpuId;
        if (planned->hours > 0 && std::isfinite(planned->hours))
            job.hours = planned->hours;
        if (const plan::VmSize* vm = job.vmSize.empty() ? nullptr : catalog->findVm(job.vmSize);
            vm && vm->gpusPerVm > 0 && vm->vcpus > 0)
            job.cpusPerNode = std::max(1, vm->vcpus * job.gpusPerNode / vm->gpusPerVm);
        if (!planned->fits)
            job.notes.push_back("the plan does not fit in GPU memory (see tunebench-cli plan)");
        if (in.precision == plan::Precision::Bf16)
            job.notes.push_back("pure bf16 written as accelerate's mixed_precision bf16");
        job.sharding = in.sharding;
        job.offload = in.offload;
        job.activationCheckpointing = in.gradientCheckpointing;
        job.mixedPrecision = mixedPrecisionName(in.precision);
        job.gradAccum = in.gradAccum;
        job.microBatch = in.microBatch;
        job.source = sources.planPath.empty() ? std::string("a plan") : sources.planPath;
        defaultName = "tunebench-" + baseName(in.model);
    } else {
        job.notes.push_back("no plan: 1 node x 1 GPU, DDP, unless --nodes / --gpus-per-node "
                            "say otherwise; no time estimate");
        job.sharding = plan::Sharding::Ddp;
    }

    if (sources.config) {
        const config::RunConfig& cfg = *sources.config;
        const std::string precision = configPrecisionName(cfg.precision);
        if (sources.plan && precision != job.mixedPrecision)
            job.notes.push_back("precision: the plan says " + job.mixedPrecision
                + ", the run config " + std::string(toString(cfg.precision))
                + "; the run config's is exported (the trainer reads it)");
        if (sources.plan && cfg.training.gradAccum != job.gradAccum)
            job.notes.push_back("gradient accumulation: the plan says "
                + std::to_string(job.gradAccum) + ", the run config "
                + std::to_string(cfg.training.gradAccum) + "; the run config's is exported");
        if (sources.plan && cfg.training.microBatch != job.microBatch)
            job.notes.push_back("micro-batch: the plan says " + std::to_string(job.microBatch)
                + ", the run config " + std::to_string(cfg.training.microBatch)
                + "; the plan's memory and time assume the plan's");
        if (sources.plan && cfg.activationCheckpointing != job.activationCheckpointing)
            job.notes.push_back(std::string("activation checkpointing: the plan ")
                + (job.activationCheckpointing ? "uses" : "does not use") + " it, the run config "
                + (cfg.activationCheckpointing ? "does" : "does not")
                + "; the run config's is exported");
        takeConfigSharding(job, cfg, sources.plan.has_value());
        job.mixedPrecision = precision;
        job.gradAccum = cfg.training.gradAccum;
        job.microBatch = cfg.training.microBatch;
        job.activationCheckpointing = cfg.activationCheckpointing;
        if (!cfg.name.empty())
            defaultName = cfg.name;
        else if (!sources.plan && !cfg.model.empty())
            defaultName = "tunebench-" + baseName(cfg.model);
        job.source =
            job.source.empty() ? sources.configPath : job.source + " + " + sources.configPath;
    }

    if (!sources.configPath.empty()) {
        job.configPath = sources.configPath;
        std::error_code error;
        const fs::path absolute = fs::absolute(sources.configPath, error);
        if (!error)
            job.configDir = absolute.parent_path().lexically_normal().string();
    } else {
        job.notes.push_back("no run config given: the command names run.yaml");
    }

    if (settings.nodes > 0)
        job.nodes = settings.nodes;
    if (settings.gpusPerNode > 0)
        job.gpusPerNode = settings.gpusPerNode;
    if (settings.cpusPerTask > 0)
        job.cpusPerNode = settings.cpusPerTask * job.gpusPerNode;
    if (settings.hours)
        job.hours = *settings.hours;
    if (job.cpusPerNode <= 0) {
        // Eight cores per GPU feeds a data loader and the launcher comfortably.
        job.cpusPerNode = 8 * job.gpusPerNode;
        job.cpusAssumed = true;
    }
    if (job.sharding == plan::Sharding::FsdpHybrid && job.nodes == 1)
        job.notes.push_back("HYBRID_SHARD on one node is FULL_SHARD");
    job.jobName = sanitizeJobName(settings.jobName.empty() ? defaultName : settings.jobName);
    job.masterAddr = settings.masterAddr;
    job.masterPort = settings.masterPort;
    job.cluster = settings.cluster;
    job.environment = settings.environment;
    job.image = settings.image;
    job.partition = settings.partition;
    if (job.masterPort < 1 || job.masterPort > 65535)
        return common::Error{
            "master port: got " + std::to_string(job.masterPort) + ", expected 1 to 65535", {}};
    chooseDevice(job, sources);
    if (common::Status supported = checkTrainerSupports(job, sources); !supported)
        return supported.error();
    return job;
}

} // namespace tb::launch
