#include "launch/exporters.h"
#include "launch/text_quote.h"

namespace tb::launch {

std::string torchrunScript(const ExportJob& job)
{
    std::string text = "#!/bin/sh\n" + exportHeader(job, "torchrun command");
    std::string nodeRank = "0";
    std::string masterAddr = job.masterAddr.empty() ? "127.0.0.1" : shellQuote(job.masterAddr);
    if (job.nodes > 1) {
        text += "# Run on each of the " + std::to_string(job.nodes)
            + " nodes with NODE_RANK set to 0.." + std::to_string(job.nodes - 1);
        if (job.masterAddr.empty()) {
            text += " and MASTER_ADDR to node 0's address";
            masterAddr = "\"${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}\"";
        }
        text += ".\n";
        nodeRank = "\"${NODE_RANK:?set NODE_RANK to the index of this node, 0 to "
            + std::to_string(job.nodes - 1) + "}\"";
    }
    text += "# torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and\n"
            "# MASTER_PORT for each rank; --no_python runs our executable as it is.\n";
    text += "torchrun --nnodes=" + std::to_string(job.nodes)
        + " --nproc_per_node=" + std::to_string(job.gpusPerNode) + " --node_rank=" + nodeRank
        + " --master_addr=" + masterAddr + " --master_port=" + std::to_string(job.masterPort)
        + " --no_python " + trainCommandLine(job, job.configPath) + "\n";
    return text;
}

} // namespace tb::launch
