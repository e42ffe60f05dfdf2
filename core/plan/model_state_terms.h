#pragma once

#include "plan/memory_parts.h"

// The model states of one GPU as a strategy lays them out (memory_model.cpp
// picks the layout per strategy; model_state_terms.cpp adds the components).
namespace tb::plan::detail {

// How a strategy lays out the weights on one GPU: what each copy costs per
// parameter and over how many GPUs it is divided.
struct WeightLayout {
    double frozenDivisor = 1; // the frozen base (LoRA, QLoRA)
    double trainableBytes = 2; // the working copy of what trains
    const char* trainableDtype = "bf16";
    double trainableDivisor = 1;
    double masterBytes = 0; // the fp32 master, 0 when there is none on the GPU
    double masterDivisor = 1;
    const char* where = ""; // ", replicated on every GPU"
    const char* label = "Weights"; // a full fine-tune's working copy
};

// The working weights (a full fine-tune's, or the frozen base and the LoRA
// adapters) and the fp32 master, as `layout` says.
void addWeights(MemoryBuilder& b, const WeightLayout& layout);
// QLoRA's quantization constants. bitsandbytes keeps them in each 4-bit
// layer's quant_state, a plain attribute rather than a parameter or buffer:
// FSDP and DeepSpeed ZeRO-3 shard and offload parameters only, so under
// the reference engines every GPU holds them whole, parameter offload or
// not. Our trainer shards them with the NF4 codes (docs/DISTRIBUTED.md).
bool quantConstantsStayWhole(const PlanContext& ctx);
// The constants, divided over `frozenDivisor` GPUs where they are sharded.
void addQuantConstants(MemoryBuilder& b, double frozenDivisor);
// The optimizer states of every trainable parameter, divided over `div` GPUs.
void addOptimizer(MemoryBuilder& b, double div);
// Gradients whole on every GPU (`whole` bytes each) plus a partition of
// `partition` bytes each over `partitionDiv` GPUs.
void addGradients(
    MemoryBuilder& b, double whole, double partition, double partitionDiv, const char* what);

} // namespace tb::plan::detail
