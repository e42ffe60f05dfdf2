#include "launch/exporters.h"
#include "launch/text_quote.h"

#include <filesystem>

namespace tb::launch {

std::string azureMlJobYaml(const ExportJob& job, AzureMlMode mode)
{
    // Azure ML uploads `code` and runs the command inside it, so the command
    // names the run config relative to that folder.
    const bool haveDir = !job.configDir.empty();
    const std::string configName =
        haveDir ? std::filesystem::path(job.configPath).filename().string() : job.configPath;
    const bool perNode = mode == AzureMlMode::LauncherPerNode;

    std::string text = exportHeader(job, "Azure ML command job");
    text += "# Submit with: az ml job create --file <this file> --resource-group <group> "
            "--workspace-name <workspace>\n";
    if (job.image.empty())
        text += "# " + job.environment
            + " must provide tunebench-cli and tunebench-trainer on "
              "the PATH\n# (docs/EXPORTS.md: an image from packaging/docker/Dockerfile).\n";
    else
        text += "# The image must provide tunebench-cli and tunebench-trainer on the PATH\n"
                "# (docs/EXPORTS.md: packaging/docker/Dockerfile builds one).\n";
    if (perNode)
        text += "# One process per node runs tunebench-cli launch, which starts the node's ranks;\n"
                "# Azure ML sets MASTER_ADDR, MASTER_PORT and NODE_RANK on every node.\n";
    else
        text += "# Azure ML starts one trainer per GPU and sets RANK, LOCAL_RANK, WORLD_SIZE,\n"
                "# NODE_RANK, MASTER_ADDR and MASTER_PORT; LOCAL_WORLD_SIZE is set below.\n";
    if (!job.cluster.empty() && !job.vmSize.empty())
        text += "# The compute cluster's VM size must be " + job.vmSize + ".\n";
    if (job.cluster.empty())
        text += "# No compute given: serverless compute of resources.instance_type.\n";

    std::string command;
    if (perNode)
        command = launchCommandLine(job, configName, "$NODE_RANK", "$MASTER_ADDR", "$MASTER_PORT");
    else
        command = trainCommandLine(job, configName);

    text += "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\n";
    text += "type: command\n";
    text += "display_name: " + yamlString(job.jobName) + "\n";
    text += "experiment_name: tunebench\n";
    text += "code: " + yamlString(haveDir ? job.configDir : std::string(".")) + "\n";
    text += "command: " + yamlString(command) + "\n";
    if (job.image.empty())
        text += "environment: " + yamlString(job.environment) + "\n";
    else
        text += "environment:\n  image: " + yamlString(job.image) + "\n";
    if (!job.cluster.empty())
        text += "compute: " + yamlString("azureml:" + job.cluster) + "\n";
    if (!perNode) {
        text += "environment_variables:\n";
        text += "  LOCAL_WORLD_SIZE: " + yamlString(std::to_string(job.gpusPerNode)) + "\n";
    }
    text += "resources:\n";
    text += "  instance_count: " + std::to_string(job.nodes) + "\n";
    if (!job.vmSize.empty())
        text += "  instance_type: " + yamlString(job.vmSize) + "\n";
    text += "distribution:\n";
    text += "  type: pytorch\n";
    text += "  process_count_per_instance: " + std::to_string(perNode ? 1 : job.gpusPerNode) + "\n";
    return text;
}

} // namespace tb::launch
