#include "launch/exporters.h"
#include "launch/text_quote.h"

namespace tb::launch {

namespace {

std::string distributedType(const ExportJob& job)
{
    if (plan::isFsdp(job.sharding))
        return "FSDP";
    if (plan::isZero(job.sharding))
        return "DEEPSPEED";
    return job.worldSize() > 1 ? "MULTI_GPU" : "NO";
}

std::string fsdpStrategy(plan::Sharding sharding)
{
    switch (sharding) {
    case plan::Sharding::FsdpGradOp:
        return "SHARD_GRAD_OP";
    case plan::Sharding::FsdpHybrid:
        return "HYBRID_SHARD";
    default:
        return "FULL_SHARD";
    }
}

int zeroStage(plan::Sharding sharding)
{
    switch (sharding) {
    case plan::Sharding::Zero1:
        return 1;
    case plan::Sharding::Zero2:
        return 2;
    case plan::Sharding::Zero3:
        return 3;
    default:
        return 0;
    }
}

const char* flag(bool value)
{
    return value ? "true" : "false";
}

} // namespace

std::string accelerateLaunchCommand(const ExportJob& job, const std::string& configFile)
{
    std::string line = "accelerate launch --config_file " + shellQuote(configFile);
    if (job.nodes > 1) {
        line += " --machine_rank \"${NODE_RANK:?set NODE_RANK to the index of this node}\"";
        if (job.masterAddr.empty())
            line +=
                " --main_process_ip \"${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}\"";
    }
    return line + " --no_python " + shellQuote(job.program) + " train "
        + shellQuote(job.configPath);
}

std::string accelerateConfigYaml(const ExportJob& job, const std::string& configFile)
{
    std::string text = exportHeader(job, "accelerate config");
    text +=
        "# Start it on every node with:\n#   " + accelerateLaunchCommand(job, configFile) + "\n";
    text += "# accelerate starts the processes; the trainer reads its strategy and gradient\n"
            "# accumulation ("
        + std::to_string(job.gradAccum) + ") from the run config, not from the sections below.\n";
    const std::string type = distributedType(job);
    text += "compute_environment: LOCAL_MACHINE\n";
    text += "debug: false\n";
    text += "distributed_type: " + yamlString(type) + "\n";
    if (type == "FSDP") {
        text += "fsdp_config:\n";
        text += "  fsdp_sharding_strategy: " + fsdpStrategy(job.sharding) + "\n";
        text += "  fsdp_offload_params: "
            + std::string(flag(job.offload == plan::Offload::OptimizerAndParams)) + "\n";
        text += "  fsdp_activation_checkpointing: " + std::string(flag(job.activationCheckpointing))
            + "\n";
        text += "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
        text += "  fsdp_backward_prefetch: BACKWARD_PRE\n";
        text += "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
        text += "  fsdp_use_orig_params: true\n";
    } else if (type == "DEEPSPEED") {
        const int stage = zeroStage(job.sharding);
        const bool optimizerOffload = job.offload != plan::Offload::None;
        const bool paramOffload = job.offload == plan::Offload::OptimizerAndParams;
        text += "deepspeed_config:\n";
        text += "  zero_stage: " + std::to_string(stage) + "\n";
        text +=
            "  offload_optimizer_device: " + std::string(optimizerOffload ? "cpu" : "none") + "\n";
        text += "  offload_param_device: " + std::string(paramOffload ? "cpu" : "none") + "\n";
        text += "  gradient_accumulation_steps: " + std::to_string(job.gradAccum) + "\n";
        text += "  zero3_init_flag: " + std::string(flag(stage == 3)) + "\n";
        if (stage == 3)
            text += "  zero3_save_16bit_model: true\n";
        if (job.nodes > 1)
            text += "  deepspeed_multinode_launcher: standard\n";
    }
    text += "downcast_bf16: " + yamlString("no") + "\n";
    text += "machine_rank: 0\n";
    if (!job.masterAddr.empty())
        text += "main_process_ip: " + yamlString(job.masterAddr) + "\n";
    text += "main_process_port: " + std::to_string(job.masterPort) + "\n";
    text += "main_training_function: main\n";
    text += "mixed_precision: " + yamlString(job.mixedPrecision) + "\n";
    text += "num_machines: " + std::to_string(job.nodes) + "\n";
    text += "num_processes: " + std::to_string(job.worldSize()) + "\n";
    text += "rdzv_backend: static\n";
    text += "same_network: true\n";
    text += "use_cpu: false\n";
    return text;
}

} // namespace tb::launch
