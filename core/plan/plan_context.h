#pragma once

#include "model/model_spec.h"
#include "model/parameter_count.h"
#include "plan/hardware.h"
#include "plan/plan_input.h"
#include "plan/plan_result.h"

#include <string>
#include <vector>

// Quantities derived once from (input, model, GPU, VM) and shared by the
// memory and throughput models. Internal to core/plan.
namespace tb::plan::detail {

// Which block matrices carry a LoRA adapter (fused Phi-3 names count for
// their parts).
struct LoraTargets {
    bool q = false, k = false, v = false, o = false, gate = false, up = false, down = false;

    void mark(model::LinearKind kind);
    bool has(model::LinearKind kind) const; // a fused matrix counts when its parts are targeted
};

// Which of a mixture of experts' fused weights LoRA adapts
// (lora.target_parameters), in some layer.
struct ExpertLoraWeights {
    bool gateUp = false;
    bool down = false;
};

struct PlanContext {
    PlanContext(const PlanInput& input, const model::ModelSpec& spec, const GpuSpec& gpuSpec,
        const VmSize* vmSize, bool withExplanations)
        : in(input)
        , model(spec)
        , gpu(gpuSpec)
        , vm(vmSize)
        , explain(withExplanations)
    {
    }

    const PlanInput& in;
    const model::ModelSpec& model;
    const GpuSpec& gpu;
    const VmSize* vm;
    bool explain;

    model::ParameterCount counts;
    bool lora = false; // LoRA or QLoRA
    bool qlora = false;
    bool full = false;
    double total = 0; // N
    double trainable = 0; // T (full: N; LoRA: adapter parameters)
    double frozen16 = 0; // frozen parameters stored in 16-bit (or fp32) form
    double quantized = 0; // QLoRA: block linear weights stored in NF4
    double mxfp4 = 0; // gpt-oss: expert weights held as published, in MXFP4 (mxfp4_experts stored)
    double loraPerLayer = 0;
    LoraTargets targets;
    ExpertLoraWeights expertTargets; // lora.target_parameters' expert weights
    std::vector<std::string> unknownTargets;

    int gpusPerNode = 1;
    int nodes = 1;
    int world = 1;
    int shardGroup = 1; // GPUs a sharded copy is split over
    double gpuFraction = 1;

    Precision precision = Precision::Bf16Mixed;
    bool mixed = true;
    bool bf16Emulated = false; // bf16 asked on a GPU without it
    double act = 2; // bytes per activation element
    const char* actName = "bf16";
    double frozenBytes = 2; // bytes per frozen 16-bit parameter
    const char* frozenName = "bf16";
    double adapterBytes = 2; // bytes per LoRA parameter and its gradient
    // The Hugging Face Trainer with peft (engine hf-trainer, 4.14): matmuls
    // under torch.autocast (bf16=True / fp16=True), QLoRA's fp32 casts of
    // every parameter left unquantised (prepare_model_for_kbit_training),
    // and the hidden states' bytes per element that follow from both.
    bool hf = false;
    bool autocast = false;
    bool kbitUpcast = false;
    // QLoRA that FSDP shards under the Trainer: TRL skips
    // prepare_model_for_kbit_training and peft's fp32 adapter cast.
    bool shardedQlora = false;
    double streamBytes = 2;
    LossMode loss = LossMode::Chunked; // the input's, auto resolved
    // The row length the largest micro-batch is padded to (the run's longest
    // row when its data was read, else seq_len), and the mean one.
    double peakSeqLen = 0;
    double meanSeqLen = 0;
    // DPO (4.15): rows per forward are twice micro_batch (each pair's chosen
    // and rejected row), and the loss takes logits of the completion tokens.
    bool dpo = false;
    double rowsPerMicro = 1; // rowsPerMicroBatch: micro_batch, x 2 under DPO
    double tokensPerMicro = 0; // rowsPerMicro x peakSeqLen: the activation peak's tokens
    // DPO: the completion tokens of the largest micro-batch, whose logits the
    // loss makes (the data's count when profiled, else every token: a bound).
    double completionTokens = 0;

    // The attention counted: the input's, but eager where our trainer runs
    // a model whose scores are softcapped (Gemma 2): no fused kernel caps.
    Attention attention = Attention::Sdpa;
    bool attentionForcedEager = false;
    bool softcappedScores = false; // eager scores also keep tanh's output for backward

    // Optimizer state bytes per trainable parameter (Adafactor averaged over
    // its factored shapes), and the state dtype's size.
    double optimizerBytes = 8;
    double optimizerStateBytes = 4;
    // How AdamW's update runs (auto resolved), and who runs it that way.
    OptimizerKernel optimizerKernel = OptimizerKernel::Fused;
    const char* optimizerKernelBy = "";

    double peakTflops = 0;
    const char* peakName = "bf16";
    double utilisation = 0.4;
};

PlanContext makeContext(const PlanInput& in, const model::ModelSpec& model, const GpuSpec& gpu,
    const VmSize* vm, bool explain);

// Appends the per-GPU memory components, the CPU offload figure and the verdict.
void computeMemory(const PlanContext& ctx, PlanResult& result);
// Appends throughput, time and cost figures.
void computeThroughput(const PlanContext& ctx, PlanResult& result);

// The model parameters a LoRA adapter set adds, per layer.
double loraParamsPerLayer(const model::ModelSpec& model, const LoraSettings& lora,
    LoraTargets* targets, std::vector<std::string>* unknown);

// The parameters LoRA on the experts' fused weights adds over all layers, as
// peft's target_parameters and our trainer make them: rank x experts x (in +
// out) per adapted weight and layer (gate_up_proj: hidden + 2 x expert
// intermediate; down_proj: expert intermediate + hidden). `largestLayer`
// receives a layer's most; `unknown` the targets that select no weight.
// `adapted` receives which of the two weights some layer adapts.
double expertLoraParams(const model::ModelSpec& model, const LoraSettings& lora,
    double* largestLayer, std::vector<std::string>* unknown, ExpertLoraWeights* adapted = nullptr);

// NF4's quantization constants per weight (QLoRA Sec. 2): an fp32 absmax per
// block of 64, or with double quantization an 8-bit one and an fp32 scale
// per 256 of those.
inline constexpr double kQuantConstantsPerParam = 4.0 / 64;
inline constexpr double kDoubleQuantConstantsPerParam = 1.0 / 64 + 4.0 / (64.0 * 256.0);
double quantConstantsPerParam(const PlanContext& ctx);
inline constexpr double kNf4BytesPerParam = 0.5;

// The frozen parameters held below 16 bits (QLoRA's NF4 codes, gpt-oss's
// MXFP4 experts), and their bytes without NF4's quantization constants.
double lowBitParams(const PlanContext& ctx);
double lowBitBytes(const PlanContext& ctx);

} // namespace tb::plan::detail
