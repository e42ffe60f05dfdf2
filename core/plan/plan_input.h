#pragma once

#include "common/error.h"
#include "common/training_rules.h"
#include "common/training_terms.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Everything a plan is made of. The defaults describe Tunebench's own
// trainer (docs/PLANNER.md, "Plan inputs and their defaults"): bf16 mixed
// precision with fp32 master weights, AdamW, LoRA r=16 on every linear layer
// of the blocks, SDPA attention, activation checkpointing on every layer,
// chunked cross-entropy. The framework-behaviour inputs (attention, loss,
// DDP bucket views) let the planner describe other trainers too.
namespace tb::plan {

// Method, precision, sharding and offload, with their spellings, are shared
// with the run configuration.
using common::Method, common::Objective, common::Offload, common::Precision, common::Sharding,
    common::toString;

enum class Optimizer {
    AdamW, // two fp32 moments
    AdamW8bit, // bitsandbytes 8-bit blockwise moments
    Sgd, // SGD with momentum (one moment)
    Adafactor, // factored second moment, no first moment
};

// How AdamW's update runs, which decides what the optimizer step allocates:
// torch.optim.AdamW's multi-tensor (foreach) path makes one temporary per
// parameter the size of its variance (sqrt(v) / bias correction + eps); the
// fused kernel updates in place. Auto: what the engine runs (our trainer and
// DeepSpeed's FusedAdam: fused; the Hugging Face Trainer: its default optim).
enum class OptimizerKernel { Auto, Foreach, Fused };

enum class Attention {
    Eager, // scores and softmax stored: memory grows with seq_len^2
    Sdpa, // flash / memory-efficient SDPA: the score matrix is never stored
};

enum class LossMode {
    Auto, // what the engine computes: full-fp32 for the Hugging Face Trainer, else chunked
    FullFp32, // the whole batch's logits upcast to fp32 (Hugging Face Trainer)
    Chunked, // fp32 only chunk by chunk (torchtune; Tunebench's trainer)
    Fused, // linear + cross-entropy fused per chunk: full logits never exist (Liger)
};

struct LoraSettings {
    int rank = 16;
    double alpha = 32.0;
    double dropout = 0.05;
    // HF module names (q_proj, ..., down_proj); empty = every linear layer of the blocks.
    std::vector<std::string> targetModules;
    // A mixture of experts' fused expert weights, by peft's target_parameters
    // names (mlp.experts.gate_up_proj, mlp.experts.down_proj); empty: none.
    std::vector<std::string> targetParameters;
};

// DeepSpeed ZeRO settings that change GPU or CPU memory, with DeepSpeed's
// defaults (docs: deepspeed.ai "DeepSpeed Configuration JSON", ZeRO and
// offload sections). Sizes are in elements; 0 means "auto" as the Hugging
// Face integration fills it: reduce bucket h^2, prefetch bucket 0.9 h^2.
struct DeepSpeedSettings {
    double reduceBucketSize = 5e8; // reduce_bucket_size
    double allgatherBucketSize = 5e8; // allgather_bucket_size (ZeRO-1/2)
    // overlap_comm: DeepSpeed's default is off for ZeRO-1/2 and on for ZeRO-3.
    std::optional<bool> overlapComm;
    bool contiguousGradients = true; // contiguous_gradients: the gradient (IPG) buffer
    double prefetchBucketSize = 5e7; // stage3_prefetch_bucket_size
    double maxLiveParameters = 1e9; // stage3_max_live_parameters
    bool pinMemory = false; // offload_*.pin_memory
    int paramBufferCount = 5; // offload_param.buffer_count
    double paramBufferSize = 1e8; // offload_param.buffer_size (elements)
};

// FSDP settings that change how many units are gathered at once, and how
// long and how large the gradients are held.
enum class BackwardPrefetch { Pre, Post, None };
struct FsdpSettings {
    BackwardPrefetch backwardPrefetch = BackwardPrefetch::Pre; // PyTorch's default
    bool forwardPrefetch = false;
    bool limitAllGathers = true;
    // Gradient accumulation inside FSDP's no_sync (Lightning Fabric's
    // no_backward_sync, accelerate without sync_each_batch, fsdp_qlora's
    // --no_sync): every unit's gradient stays unsharded on every GPU from
    // the first micro-batch to the step, instead of a reduce-scatter each.
    bool noSync = false;
    // LoRA adapters inside their decoder layer's unit, beside its frozen
    // weights (use_orig_params with a wrap by layer, as lit-gpt wraps by
    // Block), rather than in units of their own (peft's and fsdp_qlora's
    // wrap policies): the unit's one flat gradient covers the frozen
    // weights too.
    bool adaptersInLayerUnits = false;
};

// Whose implementation of a sharding the memory model follows. Reference:
// DeepSpeed's ZeRO and PyTorch's FSDP as their documentation describes them
// (imported configs, the published measurements). Tunebench: our own
// trainer, which every export runs and whose run_start prediction this is;
// its ZeRO-3 is FSDP's full sharding over the same per-layer units, with no
// DeepSpeed buckets or live-parameter budget (docs/DISTRIBUTED.md).
// HfTrainer: a transformers model with peft's adapters under the Hugging
// Face Trainer (or TRL's SFTTrainer) on one GPU, DDP or accelerate's FSDP,
// as the versions of packaging/python-reference.txt run it: fp32 adapters,
// QLoRA's fp32 casts (prepare_model_for_kbit_training) unless FSDP shards
// the model, the loss on the whole batch's logits (docs/PLANNER.md 4.14,
// 4.18).
enum class Engine { Reference, Tunebench, HfTrainer };

// How a model whose experts are published in MXFP4 (gpt-oss) holds them in
// training: Stored, as published (4.25 bits a weight, frozen: no gradient
// reaches them, so only LoRA on the other projections trains), or Upcast,
// dequantised to the compute dtype on load (transformers' Mxfp4Config
// dequantize=True), like any other model's experts.
enum class Mxfp4Experts { Stored, Upcast };

// The run's own training data, read and batched as our trainer batches it
// (launch/run_data_profile.h; plan --from-run): one epoch over every rank.
// With rows > 0 it replaces the nominal dataset and sequence length: the
// longest row sets the activation peak, the batches' padded tokens the time.
struct DataProfile {
    std::int64_t rows = 0; // rows the epoch's micro-batches carry (the sampler's repeats too)
    std::int64_t tokens = 0; // their real tokens
    std::int64_t batchTokens = 0; // tokens the micro-batches carry, padding included
    std::int64_t microBatches = 0; // per epoch, all ranks together
    int longestRow = 0; // tokens in the longest row, padded to by its micro-batch
    // The most labelled (completion) tokens one micro-batch carries: DPO
    // takes logits of those alone. 0: not counted (every token is).
    std::int64_t peakLossTokens = 0;
    std::string source; // the files read, for explanations

    bool measured() const { return rows > 0; }
};

struct PlanInput {
    // Model: a preset name, a Hugging Face repo id of a preset, or the path
    // of a config.json (or of the folder holding one).
    std::string model = "Llama-3.1-8B";

    Method method = Method::Lora;
    // QLoRA: the NF4 blocks' fp32 absmax quantised again to 8 bits, as
    // bitsandbytes' bnb_4bit_use_double_quant (QLoRA Sec. 2). transformers'
    // BitsAndBytesConfig leaves it off; Tunebench's trainer always does it.
    bool doubleQuant = true;
    // Dpo as our trainer runs it (train/dpo_step.h): micro_batch counts
    // pairs, each two padded rows (chosen, rejected) in one forward, after a
    // reference forward of the same rows without gradient and with the
    // adapter disabled (docs/PLANNER.md 4.15).
    Objective objective = Objective::Sft;
    Mxfp4Experts mxfp4Experts = Mxfp4Experts::Stored;
    LoraSettings lora;
    Precision precision = Precision::Bf16Mixed;
    Optimizer optimizer = Optimizer::AdamW;
    OptimizerKernel optimizerKernel = OptimizerKernel::Auto;
    Sharding sharding = Sharding::Ddp;
    Offload offload = Offload::None;

    bool gradientCheckpointing = true; // recompute every decoder layer in backward
    Attention attention = Attention::Sdpa;
    LossMode loss = LossMode::Auto;
    int lossChunks = 8; // chunks of the chunked / fused loss (torchtune uses 8)
    // DDP's gradient_as_bucket_view: when false (PyTorch's default) the
    // all-reduce buckets are a second copy of the gradients.
    bool ddpBucketView = true;
    DeepSpeedSettings deepspeed; // ZeRO strategies
    Engine engine = Engine::Reference;
    FsdpSettings fsdp; // FSDP strategies

    int microBatch = 4; // sequences; under DPO, preference pairs (two rows each)
    int seqLen = 2048;
    int gradAccum = 4;
    // The evaluation's micro-batch per GPU, as the Hugging Face Trainer's
    // per_device_eval_batch_size (engine hf-trainer); 0: no evaluation
    // planned. Tunebench's trainer evaluates at microBatch without grad,
    // below its step.
    int evalBatch = 0;
    bool packing = true; // samples packed into full sequences (else one padded sample a row)

    // Hardware: an Azure VM size sets the GPU kind and GPUs per node; without
    // one, `gpu` names a GPU from presets/hardware/gpus.yaml.
    std::string vmSize = "Standard_NC24ads_A100_v4";
    std::string gpu; // empty: the VM's GPU
    int gpusPerNode = 1; // 0: all of the VM's GPUs
    int nodes = 1;

    // Dataset: samples x mean tokens, unless datasetTokens is set.
    std::int64_t datasetSamples = 50000;
    double meanTokensPerSample = 1000.0;
    std::int64_t datasetTokens = 0; // 0: samples x mean tokens
    double epochs = 3.0;
    DataProfile data; // measured from the run's data; not saved in plan files

    // Calibration overrides (0: the GPU preset's documented value).
    double utilisationOverride = 0.0; // achievable fraction of dense peak
    double cudaContextGiB = 0.0; // CUDA context + library workspaces per GPU
    double allocatorOverhead = 0.0; // reserved beyond allocated, as a fraction of transients
    // Set by applyCalibration ("calibrated by 3 runs on H100-SXM"); not saved in plan files.
    std::string calibrationNote;

    std::int64_t trainingTokens() const; // dataset tokens x epochs
};

// Every problem with the input (ranges, combinations such as parameter
// offload without ZeRO-3/FSDP), each naming its field; joined into one Error.
common::Status validatePlanInput(const PlanInput& input);

// Names used on the command line, in plan YAML and in JSON ("bf16-mixed",
// "fsdp-full", ...). parse* accept the CLI spellings and common aliases
// ("none" -> Ddp, "zero-3" -> Zero3, "adamw_8bit" -> AdamW8bit), any case.
// Method, precision, sharding and offload spell as common/training_terms.h.
std::string_view toString(Optimizer value);
std::string_view toString(OptimizerKernel value); // "auto", "foreach", "fused"
std::string_view toString(Attention value);
std::string_view toString(LossMode value);
std::string_view toString(Engine value); // "reference", "tunebench", "hf-trainer"
std::string_view toString(Mxfp4Experts value); // "stored", "upcast"

// The loss an engine computes when the input says auto: transformers' fp32
// logits of the whole batch for the Hugging Face Trainer, else chunked.
LossMode resolvedLoss(const PlanInput& input);

std::optional<Method> parseMethod(std::string_view text);
std::optional<Precision> parsePrecision(std::string_view text);
std::optional<Optimizer> parseOptimizer(std::string_view text);
std::optional<OptimizerKernel> parseOptimizerKernel(std::string_view text);
std::optional<Sharding> parseSharding(std::string_view text);
std::optional<Offload> parseOffload(std::string_view text);
std::optional<Attention> parseAttention(std::string_view text);
std::optional<LossMode> parseLossMode(std::string_view text);
std::optional<Engine> parseEngine(std::string_view text);
std::optional<Objective> parseObjective(std::string_view text);
std::optional<Mxfp4Experts> parseMxfp4Experts(std::string_view text);

// The accepted spellings, for help text and error messages.
std::vector<std::string> methodNames();
std::vector<std::string> precisionNames();
std::vector<std::string> optimizerNames();
std::vector<std::string> optimizerKernelNames();
std::vector<std::string> shardingNames();
std::vector<std::string> offloadNames();
std::vector<std::string> attentionNames();
std::vector<std::string> lossModeNames();
std::vector<std::string> engineNames();
std::vector<std::string> objectiveNames();
std::vector<std::string> mxfp4ExpertsNames();

// Rows one micro-batch's forward carries: micro_batch, twice that under DPO.
int rowsPerMicroBatch(const PlanInput& input);

// Human labels for UI combos ("FSDP FULL_SHARD", "bf16 mixed (fp32 master)").
std::string_view label(Sharding value);
std::string_view label(Precision value);

bool isZero(Sharding s); // ZeRO-1/2/3
using common::isFsdp; // FSDP full / grad-op / hybrid (common/training_rules.h)

} // namespace tb::plan
