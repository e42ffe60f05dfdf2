#include "launch/exporters.h"
#include "launch/text_quote.h"

namespace tb::launch {

namespace {

std::string sbatchOptions(const ExportJob& job)
{
    std::string text = "#SBATCH --job-name=" + job.jobName + "\n";
    text += "#SBATCH --nodes=" + std::to_string(job.nodes) + "\n";
    text += "#SBATCH --ntasks-per-node=" + std::to_string(job.gpusPerNode) + "\n";
    if (job.onGpus)
        text += "#SBATCH --gpus-per-node=" + std::to_string(job.gpusPerNode) + "\n";
    text += "#SBATCH --cpus-per-task=" + std::to_string(job.cpusPerRank()) + "\n";
    if (job.hours)
        text += "#SBATCH --time=" + slurmTimeLimit(*job.hours) + "\n";
    text += "#SBATCH --output=%x-%j.out\n";
    if (!job.partition.empty())
        text += "#SBATCH --partition=" + job.partition + "\n";
    return text;
}

// Each task becomes one rank: torchrun's variables from Slurm's task ones
// (SLURM_PROCID is the task's rank in the job step, SLURM_LOCALID on its
// node, SLURM_NODEID the node's index), the job id as the run id.
std::string rankCommand(const ExportJob& job)
{
    return "export RANK=\"$SLURM_PROCID\" WORLD_SIZE=\"$SLURM_NTASKS\" "
           "LOCAL_RANK=\"$SLURM_LOCALID\" LOCAL_WORLD_SIZE="
        + std::to_string(job.gpusPerNode)
        + " NODE_RANK=\"$SLURM_NODEID\" GROUP_RANK=\"$SLURM_NODEID\" "
          "TORCHELASTIC_RUN_ID=\"slurm-$SLURM_JOB_ID\"; exec "
        + trainCommandLine(job, job.configPath);
}

} // namespace

std::string slurmBatchScript(const ExportJob& job)
{
    std::string text = "#!/bin/bash\n" + sbatchOptions(job);
    text += exportHeader(job, "Slurm batch script");
    if (job.hours)
        text += "# --time is the planned time x1.25 + 30 minutes.\n";
    else
        text += "# No --time: no planned duration (give --hours); the partition's limit applies.\n";
    if (job.cpusAssumed)
        text += "# --cpus-per-task assumes 8 CPUs per rank (no VM size known; give "
                "--cpus-per-task).\n";
    text += "set -eu\n\n";
    text += "# Rank 0 listens on the first host of the allocation.\n";
    if (job.masterAddr.empty())
        text += "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)\n";
    else
        text += "MASTER_ADDR=" + shellQuote(job.masterAddr) + "\n";
    text += "export MASTER_ADDR\n";
    text += "export MASTER_PORT=" + std::to_string(job.masterPort) + "\n\n";
    text += "# One task per rank (" + std::to_string(job.gpusPerNode)
        + " per node); srun ends them all if one fails.\n";
    text += "srun --nodes=" + std::to_string(job.nodes)
        + " --ntasks-per-node=" + std::to_string(job.gpusPerNode) + " --kill-on-bad-exit=1 bash -c "
        + shellQuote(rankCommand(job)) + "\n";
    return text;
}

} // namespace tb::launch
