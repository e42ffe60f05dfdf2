#pragma once

// Sources cited by the memory model's explanations, and the framework
// defaults it assumes; docs/PLANNER.md gives each in full. Shared by the
// model-states half (memory_model.cpp), the transients (activation_memory.cpp)
// and the device overhead (device_overhead.cpp).
namespace tb::plan::detail {

inline constexpr const char* kSrcZero =
    "ZeRO (Rajbhandari et al. 2020) Sec. 3: mixed-precision Adam keeps 2+2+12 bytes/param";
inline constexpr const char* kSrcDeepSpeed =
    "DeepSpeed estimate_zero2/zero3_model_states_mem_needs";
inline constexpr const char* kSrcFsdp =
    "PyTorch FSDP docs: ShardingStrategy, MixedPrecision, CPUOffload";
inline constexpr const char* kSrcDdp = "PyTorch DDP docs: gradient_as_bucket_view";
inline constexpr const char* kSrcLora =
    "LoRA (Hu et al. 2021): r x (d_in + d_out) per adapted matrix";
inline constexpr const char* kSrcQlora =
    "QLoRA (Dettmers et al. 2023) Sec. 2: NF4, blocks of 64, double quantization";
inline constexpr const char* kSrcQuantState =
    "bitsandbytes Linear4bit quant_state (no parameter or buffer); AnswerDotAI/fsdp_qlora "
    "train.py: FSDP only syncs parameters and buffers, every rank quantizes every layer";
inline constexpr const char* kSrcAct =
    "Korthikanti et al. 2022 Sec. 4, per tensor for Llama blocks (docs/PLANNER.md)";
inline constexpr const char* kSrcHfTrainer =
    "docs/PLANNER.md 4.14: transformers, peft and bitsandbytes as the Hugging Face Trainer runs "
    "them, held against PyTorch's saved tensors (tests/reference/hf_step_peak.py)";
inline constexpr const char* kSrcEager =
    "Korthikanti et al. 2022 Sec. 4: 5as^2b with dropout; here fp32 softmax + 16-bit probabilities";
inline constexpr const char* kSrcLoss = "docs/PLANNER.md, Logits: HF ForCausalLMLoss / torchtune "
                                        "CEWithChunkedOutputLoss / Liger fused CE";
inline constexpr const char* kSrcContext =
    "non-PyTorch memory in CUDA OOM reports (about 0.5 GiB, docs/PLANNER.md)";
inline constexpr const char* kSrcAllocator = "PyTorch CUDA caching allocator: "
                                             "max_memory_reserved - max_memory_allocated "
                                             "(docs/PLANNER.md 4.7)";
inline constexpr const char* kSrcNccl =
    "measured NCCL memory outside PyTorch: 544 / 688 MB per GPU for 2 / more GPUs on A100 "
    "NVLink (NVIDIA/nccl#964); 512 MiB NET proxy buffer across nodes (NVIDIA/nccl#2363)";
inline constexpr const char* kSrcOptimizer =
    "docs/PLANNER.md, Optimizer states (Adam, bnb 8-bit, SGD, Adafactor)";

inline constexpr const char* kSrcDeepSpeedConfig =
    "DeepSpeed configuration JSON docs: ZeRO bucket sizes, overlap_comm (4.5x the buckets), "
    "contiguous_gradients, stage3_max_live_parameters";
inline constexpr double kCudaContextGiB = 0.5;
inline constexpr const char* kSrcProcess =
    "resident memory at the steps of a 260 K-parameter run, one process and each rank of two "
    "alike (LibTorch 2.13 CPU), docs/DISTRIBUTED_BENCHMARKS.md";
inline constexpr double kProcessRuntimeMiB = 132; // 134.5 MiB RSS - 2.5 MiB of tensors
inline constexpr const char* kSrcGloo =
    "PyTorch's ProcessGroupGloo: _allgather_base gathers into a flat copy of the output, and "
    "reduce_scatter_tensor all-reduces a clone of its whole input";
inline constexpr double kNcclPairMiB = 544; // a process group of two GPUs
inline constexpr double kNcclGroupMiB = 688; // three or more
inline constexpr double kNcclNetMiB = 512; // the NET transport's shared buffer, across nodes
inline constexpr double kAllocatorFraction = 0.05;

} // namespace tb::plan::detail
