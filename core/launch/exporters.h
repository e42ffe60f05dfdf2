#pragma once

#include "launch/export_job.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The same job in the formats schedulers read (docs/EXPORTS.md cites each
// format's documentation). Every function renders text; none reads files.
namespace tb::launch {

enum class ExportFormat { Torchrun, Accelerate, AzureMl, Slurm };

std::optional<ExportFormat> parseExportFormat(std::string_view text); // "torchrun", ...
std::vector<std::string> exportFormatNames();

// A shell script running torchrun on one node (run it on every node): static
// rendezvous at master_addr:master_port, node_rank from $NODE_RANK when there
// are several nodes, and `--no_python <program> train <config>`.
std::string torchrunScript(const ExportJob& job);

// accelerate's config YAML with what `accelerate launch` needs to start the
// ranks (distributed_type MULTI_GPU, or NO for one rank; machines,
// processes, rendezvous), headed by the `accelerate launch` command and the
// plan's strategy as comments: the trainer takes sharding, precision and
// accumulation from the run config, so no key pretends to set them.
// `configFile` is the name the command gives --config_file.
std::string accelerateConfigYaml(const ExportJob& job, const std::string& configFile);
std::string accelerateLaunchCommand(const ExportJob& job, const std::string& configFile);

// An Azure ML command job. LauncherPerNode: one process per node running
// `launch`, which starts the node's ranks from the MASTER_ADDR, MASTER_PORT
// and NODE_RANK that Azure ML sets. ProcessPerGpu: Azure ML starts one
// `train` per GPU and sets RANK, LOCAL_RANK and WORLD_SIZE itself.
enum class AzureMlMode { LauncherPerNode, ProcessPerGpu };
std::string azureMlJobYaml(const ExportJob& job, AzureMlMode mode);

// An sbatch script: srun starts one task per rank (per GPU), each mapping
// Slurm's task variables to torchrun's and running `train`; rank 0 listens
// on the allocation's first host.
std::string slurmBatchScript(const ExportJob& job);

// sbatch's --time for a planned duration with our margin: x1.25 + 30 min,
// rounded up to the minute, as [D-]HH:MM:SS.
std::string slurmTimeLimit(double plannedHours);

// What each rank runs: `<program> train <config>` and the job's trainer
// arguments (--device cuda on a GPU job), quoted for the shell.
std::string trainCommandLine(const ExportJob& job, const std::string& configPath);

// The launcher command one node runs: `<program> launch <config> --nproc N`
// plus, with several nodes, the rendezvous options holding the given shell
// words (e.g. "$NODE_RANK"), and `-- <trainer arguments>`.
std::string launchCommandLine(const ExportJob& job, const std::string& configPath,
    const std::string& nodeRankWord, const std::string& masterAddrWord,
    const std::string& masterPortWord);

// The header comment every export starts with: what, from where, and the notes.
std::string exportHeader(const ExportJob& job, std::string_view what);

} // namespace tb::launch
