#include "launch/exporters.h"
#include "launch/text_quote.h"

namespace tb::launch {

std::string slurmBatchScript(const ExportJob& job)
{
    std::string text = "#!/bin/bash\n";
    text += "#SBATCH --job-name=" + job.jobName + "\n";
    text += "#SBATCH --nodes=" + std::to_string(job.nodes) + "\n";
    text += "#SBATCH --ntasks-per-node=1\n";
    text += "#SBATCH --gpus-per-node=" + std::to_string(job.gpusPerNode) + "\n";
    text += "#SBATCH --cpus-per-task=" + std::to_string(job.cpusPerNode) + "\n";
    if (job.hours)
        text += "#SBATCH --time=" + slurmTimeLimit(*job.hours) + "\n";
    text += "#SBATCH --output=%x-%j.out\n";
    if (!job.partition.empty())
        text += "#SBATCH --partition=" + job.partition + "\n";
    text += exportHeader(job, "Slurm batch script");
    if (job.hours)
        text += "# --time is the planned time x1.25 + 30 minutes.\n";
    else
        text += "# No --time: no planned duration (give --hours); the partition's limit applies.\n";
    if (job.cpusAssumed)
        text +=
            "# --cpus-per-task assumes 8 CPUs per GPU (no VM size known; give --cpus-per-task).\n";
    text += "set -eu\n\n";
    text += "# Rank 0 listens on the first host of the allocation.\n";
    if (job.masterAddr.empty())
        text += "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)\n";
    else
        text += "MASTER_ADDR=" + shellQuote(job.masterAddr) + "\n";
    text += "export MASTER_ADDR\n";
    text += "export MASTER_PORT=" + std::to_string(job.masterPort) + "\n\n";
    text += "# One task per node; each starts its node's " + std::to_string(job.gpusPerNode)
        + " rank(s) and ends them all if one fails.\n";
    const std::string inner = "export NODE_RANK=\"$SLURM_NODEID\"; exec "
        + launchCommandLine(
            job, job.configPath, "\"$NODE_RANK\"", "\"$MASTER_ADDR\"", "\"$MASTER_PORT\"");
    text += "srun --nodes=" + std::to_string(job.nodes)
        + " --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c " + shellQuote(inner) + "\n";
    return text;
}

} // namespace tb::launch
