#include "common/training_rules.h"

namespace tb::common {

bool shardsParameters(Sharding sharding)
{
    return sharding != Sharding::Ddp && sharding != Sharding::Zero1 && sharding != Sharding::Zero2;
}

bool isFsdp(Sharding sharding)
{
    return sharding == Sharding::FsdpFull || sharding == Sharding::FsdpGradOp
        || sharding == Sharding::FsdpHybrid;
}

std::optional<RuleViolation> checkOffload(Sharding sharding, Offload offload)
{
    const std::string got = "got " + std::string(toString(offload)) + " with sharding "
        + std::string(toString(sharding));
    if (offload == Offload::OptimizerAndParams && !shardsParameters(sharding))
        return RuleViolation{"offload",
            got + ", which keeps every parameter on every rank; expected none or optimizer",
            "parameter offload needs sharding zero3, fsdp-full, fsdp-grad-op or fsdp-hybrid"};
    if (offload == Offload::Optimizer && isFsdp(sharding))
        return RuleViolation{"offload",
            got
                + "; expected none or optimizer+params: FSDP's CPU offload moves parameters, "
                  "gradients and optimizer states together",
            "offload optimizer+params, or shard with zero1, zero2 or zero3 to offload the "
            "optimizer alone"};
    return std::nullopt;
}

} // namespace tb::common
