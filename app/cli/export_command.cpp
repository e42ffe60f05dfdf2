#include "arg_parser.h"
#include "commands.h"

#include "common/atomic_file.h"
#include "config/config_loader.h"
#include "launch/exporters.h"
#include "plan/catalog.h"
#include "plan/plan_file.h"

#include <iostream>

// tunebench-cli export: a plan and/or run config as a torchrun command, an
// accelerate config, an Azure ML command job or a Slurm script
// (docs/EXPORTS.md). The content is tb::launch's; this file reads the inputs
// and writes the result.
namespace tb::cli {

namespace {

using common::Error;

std::string joined(const std::vector<std::string>& names)
{
    std::string text;
    for (const std::string& name : names)
        text += (text.empty() ? "" : "|") + name;
    return text;
}

ArgParser exportParser()
{
    ArgParser p("export",
        "Write a plan (and the run config the trainer will read) as a job for another\n"
        "launcher or scheduler: a torchrun command, an accelerate config YAML with its\n"
        "'accelerate launch' command, an Azure ML command-job YAML, or a Slurm sbatch\n"
        "script. Every job runs 'tunebench-cli train RUN.yaml' in each rank, with\n"
        "--device cuda for a GPU plan.");
    p.addPositional(joined(launch::exportFormatNames()), "the format to write");
    p.addOption("plan", "FILE.yaml", "the plan: hardware, nodes, sharding, planned time");
    p.addOption("config", "RUN.yaml", "the run config the job trains (default: named run.yaml)");
    p.addOption("out", "PATH", "write here, atomically (default: stdout)");
    p.addOption("cluster", "NAME", "azureml: compute cluster (default: serverless compute)");
    p.addOption("environment", "ENV",
        "azureml: environment with tunebench-cli (default azureml:tunebench@latest)");
    p.addOption("image", "IMAGE",
        "azureml: Docker image with tunebench-cli, written inline instead of --environment");
    p.addFlag(
        "per-gpu", "azureml: Azure ML starts one 'train' per GPU instead of one 'launch' per node");
    p.addOption("partition", "NAME", "slurm: partition (default: the cluster's default)");
    p.addOption(
        "master-addr", "HOST", "node 0's address (default: from the scheduler or $MASTER_ADDR)");
    p.addOption("master-port", "N", "rank 0's port (default 29500)");
    p.addOption("job-name", "NAME", "job name (default: the run's name, else tunebench-<model>)");
    p.addOption("hours", "H", "training time instead of the plan's (slurm --time adds a margin)");
    p.addOption("nodes", "N", "nodes instead of the plan's");
    p.addOption("gpus-per-node", "N", "GPUs per node instead of the plan's");
    p.addOption(
        "cpus-per-task", "N", "slurm: CPUs per rank (default: the VM size's vCPUs / its GPUs)");
    p.addOption("program", "PATH", "tunebench-cli on the nodes (default: tunebench-cli in PATH)");
    p.addOption("presets", "DIR", "presets folder (default: found automatically)");
    p.setEpilog("Exit status: 0 written, 2 bad input (the message names the file and field).");
    return p;
}

common::Result<launch::ExportSettings> readSettings(const ArgParser& p)
{
    launch::ExportSettings settings;
    settings.program = p.value("program", settings.program);
    settings.masterAddr = p.value("master-addr");
    settings.cluster = p.value("cluster");
    settings.environment = p.value("environment", settings.environment);
    settings.image = p.value("image");
    settings.partition = p.value("partition");
    settings.jobName = p.value("job-name");
    const auto port = p.integer("master-port", settings.masterPort, 1, 65535);
    const auto nodes = p.integer("nodes", 0, 1, 4096);
    const auto gpus = p.integer("gpus-per-node", 0, 1, 1024);
    const auto cpus = p.integer("cpus-per-task", 0, 1, 1 << 16);
    for (const auto* value : {&port, &nodes, &gpus, &cpus}) {
        if (!*value)
            return value->error();
    }
    settings.masterPort = int(*port);
    settings.nodes = int(*nodes);
    settings.gpusPerNode = int(*gpus);
    settings.cpusPerTask = int(*cpus);
    if (p.isSet("hours")) {
        const auto hours = p.number("hours", 0, 0.001, 24.0 * 365);
        if (!hours)
            return hours.error();
        settings.hours = *hours;
    }
    if (p.isSet("image") && p.isSet("environment"))
        return Error{"export: --image and --environment: give one (the job's environment)", {}};
    if (settings.image.find_first_of(" \t\n") != std::string::npos)
        return Error{"export: --image: got '" + settings.image
                + "', expected a Docker image reference without spaces",
            {}};
    if (settings.cluster.find_first_of(" \t\n:") != std::string::npos)
        return Error{"export: --cluster: got '" + settings.cluster
                + "', expected the compute's name (without azureml:)",
            {}};
    return settings;
}

struct Rendered {
    std::string text;
    std::string command; // accelerate: the launch command that goes with the config
};

common::Result<Rendered> render(launch::ExportFormat format, const ArgParser& p)
{
    launch::ExportSources sources;
    if (p.isSet("plan")) {
        sources.planPath = p.value("plan");
        common::Result<plan::PlanInput> loaded = plan::loadPlanYaml(sources.planPath);
        if (!loaded)
            return loaded.error();
        sources.plan = *loaded;
    }
    if (p.isSet("config")) {
        sources.configPath = p.value("config");
        common::Result<config::RunConfig> loaded = config::loadRunConfig(sources.configPath);
        if (!loaded)
            return loaded.error();
        sources.config = *loaded;
    }
    if (!sources.plan && !sources.config)
        return Error{"export: give --plan FILE.yaml and/or --config RUN.yaml", "see --help"};
    if (p.isSet("per-gpu") && format != launch::ExportFormat::AzureMl)
        return Error{"export: --per-gpu: only for azureml", {}};
    std::optional<plan::Catalog> catalog;
    if (sources.plan) {
        common::Result<plan::Catalog> loaded = p.isSet("presets")
            ? plan::Catalog::load(p.value("presets"))
            : plan::Catalog::loadDefault();
        if (!loaded)
            return loaded.error();
        catalog = std::move(loaded).value();
    }
    common::Result<launch::ExportSettings> settings = readSettings(p);
    if (!settings)
        return settings.error();
    common::Result<launch::ExportJob> job =
        launch::makeExportJob(sources, catalog ? &*catalog : nullptr, *settings);
    if (!job)
        return job.error();
    for (const std::string& note : job->notes)
        std::cerr << "note: " << note << "\n";
    switch (format) {
    case launch::ExportFormat::Torchrun:
        return Rendered{launch::torchrunScript(*job), {}};
    case launch::ExportFormat::Accelerate: {
        const std::string configFile = p.value("out", "accelerate.yaml");
        return Rendered{launch::accelerateConfigYaml(*job, configFile),
            launch::accelerateLaunchCommand(*job, configFile)};
    }
    case launch::ExportFormat::AzureMl:
        return Rendered{launch::azureMlJobYaml(*job,
                            p.isSet("per-gpu") ? launch::AzureMlMode::ProcessPerGpu
                                               : launch::AzureMlMode::LauncherPerNode),
            {}};
    case launch::ExportFormat::Slurm:
        return Rendered{launch::slurmBatchScript(*job), {}};
    }
    return Error{"export: unknown format", {}};
}

} // namespace

int runExport(const Args& args)
{
    ArgParser p = exportParser();
    if (const std::optional<int> status = p.parseOrExitStatus(args))
        return *status;
    const std::vector<std::string> positionals = p.positionals();
    if (positionals.size() != 1) {
        std::cerr << "export: expected one format (" << joined(launch::exportFormatNames())
                  << "), got " << positionals.size() << " arguments\n";
        return kExitUsage;
    }
    const std::optional<launch::ExportFormat> format = launch::parseExportFormat(positionals[0]);
    if (!format) {
        std::cerr << "export: unknown format '" << positionals[0] << "', expected "
                  << joined(launch::exportFormatNames()) << "\n";
        return kExitUsage;
    }
    const common::Result<Rendered> rendered = render(*format, p);
    if (!rendered) {
        std::cerr << rendered.error().toString() << "\n";
        return kExitUsage;
    }
    if (!p.isSet("out")) {
        std::cout << rendered->text;
        return kExitOk;
    }
    if (common::Status written = common::writeFileAtomic(p.value("out"), rendered->text);
        !written) {
        std::cerr << "export: --out: " << written.error().toString() << "\n";
        return kExitUsage;
    }
    std::cerr << "wrote " << p.value("out") << "\n";
    if (!rendered->command.empty())
        std::cout << rendered->command << "\n";
    return kExitOk;
}

} // namespace tb::cli
