#include "launch/exporters.h"
#include "launch/text_quote.h"

namespace tb::launch {

std::string accelerateLaunchCommand(const ExportJob& job, const std::string& configFile)
{
    std::string line = "accelerate launch --config_file " + shellQuote(configFile);
    if (job.nodes > 1) {
        line += " --machine_rank \"${NODE_RANK:?set NODE_RANK to the index of this node}\"";
        if (job.masterAddr.empty())
            line +=
                " --main_process_ip \"${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}\"";
    }
    return line + " --no_python " + trainCommandLine(job, job.configPath);
}

// accelerate reads these keys to start the processes (MULTI_GPU hands them
// to torch.distributed.run, which sets torchrun's variables for each rank).
// The plan's strategy is stated in the header only: distributed_type FSDP or
// DEEPSPEED would make accelerate start DeepSpeed's launcher or expect an
// accelerate-based script, and mixed_precision only reaches such scripts.
std::string accelerateConfigYaml(const ExportJob& job, const std::string& configFile)
{
    std::string text = exportHeader(job, "accelerate config");
    text +=
        "# Start it on every node with:\n#   " + accelerateLaunchCommand(job, configFile) + "\n";
    text += "# accelerate only starts the ranks. The trainer reads sharding, offload, precision\n"
            "# ("
        + (job.mixedPrecision == "no" ? std::string("fp32") : job.mixedPrecision)
        + "), gradient accumulation (" + std::to_string(job.gradAccum)
        + ") and activation checkpointing from the run config,\n"
          "# so this file has no fsdp_config or deepspeed_config, "
          "and mixed_precision is \"no\".\n";
    text += "compute_environment: LOCAL_MACHINE\n";
    text += "debug: false\n";
    text += "distributed_type: " + yamlString(job.worldSize() > 1 ? "MULTI_GPU" : "NO") + "\n";
    text += "downcast_bf16: " + yamlString("no") + "\n";
    text += "machine_rank: 0\n";
    if (!job.masterAddr.empty())
        text += "main_process_ip: " + yamlString(job.masterAddr) + "\n";
    text += "main_process_port: " + std::to_string(job.masterPort) + "\n";
    text += "main_training_function: main\n";
    text += "mixed_precision: " + yamlString("no") + "\n";
    text += "num_machines: " + std::to_string(job.nodes) + "\n";
    text += "num_processes: " + std::to_string(job.worldSize()) + "\n";
    text += "rdzv_backend: static\n";
    text += "same_network: true\n";
    // true would make accelerate start one process: the device is the run's.
    text += "use_cpu: false\n";
    return text;
}

} // namespace tb::launch
