#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "plan/catalog.h"
#include "plan/plan_input.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace tb::launch {

// What the exports are made from: a plan (hardware, nodes, sharding, time)
// and/or a run config (what the trainer will actually read). At least one.
struct ExportSources {
    std::optional<plan::PlanInput> plan;
    std::string planPath; // names the plan in messages
    std::optional<config::RunConfig> config;
    std::string configPath; // the run config, as the job's command names it
};

// Choices that belong to the job rather than to the plan.
struct ExportSettings {
    std::string program = "tunebench-cli"; // the executable on the nodes
    std::string masterAddr; // empty: the scheduler's or $MASTER_ADDR at run time
    int masterPort = 29500; // torchrun's default
    std::string cluster; // Azure ML compute cluster; empty: serverless compute
    std::string environment = "azureml:tunebench@latest"; // Azure ML environment with tunebench-cli
    std::string image; // Azure ML: a Docker image with tunebench-cli; replaces `environment`
    std::string partition; // Slurm partition; empty: the cluster's default
    std::string jobName; // empty: the run config's name, else tunebench-<model>
    std::optional<double> hours; // replaces the plan's training time
    int nodes = 0; // > 0: replaces the plan's
    int gpusPerNode = 0; // > 0: replaces the plan's
    int cpusPerTask = 0; // > 0: CPUs per rank instead of the VM size's vCPUs / GPUs
};

// Everything the four exports need, resolved once: the formats only render.
struct ExportJob {
    std::string jobName; // letters, digits, '-', '_' and '.'; at most 64
    std::string program = "tunebench-cli";
    std::string configPath = "run.yaml"; // as the command names it
    std::string configDir; // absolute folder of the run config (Azure ML uploads it); "" unknown

    int nodes = 1;
    int gpusPerNode = 1; // ranks per node: one per GPU, or processes on a CPU job
    bool onGpus = true; // a GPU plan, or a run config on cuda / auto: ranks get --device cuda
    std::string vmSize; // Azure VM size; empty when planned for a bare GPU
    std::string gpu; // GPU id from the catalog
    int cpusPerNode = 0; // 0: unknown
    bool cpusAssumed = false; // cpusPerNode is our assumption, not the VM's

    plan::Sharding sharding = plan::Sharding::Ddp;
    plan::Offload offload = plan::Offload::None;
    bool activationCheckpointing = true;
    std::string mixedPrecision = "bf16"; // accelerate's spelling: no, fp16, bf16
    int gradAccum = 1;
    int microBatch = 1;

    std::optional<double> hours; // planned training time
    std::string masterAddr;
    int masterPort = 29500;
    std::string cluster;
    std::string environment;
    std::string image;
    std::string partition;
    std::string source; // "plan.yaml + run.yaml", for the header comment

    // Disagreements between plan and config, and assumptions made; the CLI
    // prints them, the exports carry them as comments.
    std::vector<std::string> notes;

    int worldSize() const { return nodes * gpusPerNode; }
    int cpusPerRank() const { return std::max(1, cpusPerNode / std::max(1, gpusPerNode)); }
    // What every rank's trainer gets after `train CONFIG`: the device.
    std::vector<std::string> trainerArguments() const;
};

// Resolves the plan against `catalog` (VM size, GPUs per node, planned
// hours), takes what the trainer reads from the config (precision,
// accumulation, checkpointing: the config wins and a disagreement is noted),
// then applies `settings`. A job the trainer would refuse on its device
// (offload on a CPU job, fp16 from a plan without a run config) is refused
// here with the reason. Errors name the file and the field.
common::Result<ExportJob> makeExportJob(
    const ExportSources& sources, const plan::Catalog* catalog, const ExportSettings& settings);

// accelerate's mixed_precision spelling of a plan's precision.
std::string mixedPrecisionName(plan::Precision precision);

} // namespace tb::launch
