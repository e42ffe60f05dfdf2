#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tb::plan {

// The chart's stacking groups. Every memory component belongs to one; the
// order here is the stacking order and the colour order in the GUI.
enum class MemoryCategory { Weights, Gradients, Optimizer, Activations, Logits, Buffers, Overhead };
inline constexpr int kMemoryCategoryCount = 7;

std::string_view categoryKey(MemoryCategory c); // "weights", ..., "overhead" (JSON keys)
std::string_view categoryLabel(MemoryCategory c); // "Weights", ..., "CUDA context + allocator"

// One term of the per-GPU peak. `key` is stable (JSON, YAML, tests, GUI
// colours): weights, master_weights, quant_constants, lora_weights,
// weights_full (FSDP SHARD_GRAD_OP's gathered copy), gradients, optimizer,
// activations, attn_scores, logits, gather_buffers, comm_buckets,
// allocator_slack, cuda_context, nccl_buffers, process_runtime (CPU plans).
// Zero-byte components are left out.
struct MemoryComponent {
    std::string key;
    MemoryCategory category = MemoryCategory::Weights;
    std::string label; // "Master weights (fp32)"
    double bytes = 0; // per GPU, at the step's peak
    std::string explanation; // the formula with the numbers put in
    std::string source; // where the formula comes from
};

// A throughput, time or cost figure with its explanation. Keys:
// flops_per_token, peak_tflops, utilisation, compute_seconds,
// comm_seconds, exposed_comm_seconds, offload_seconds, step_seconds,
// tokens_per_second, samples_per_second, training_tokens,
// optimizer_steps, hours, cost_usd.
struct Figure {
    std::string key;
    std::string label;
    double value = 0;
    std::string unit; // "s", "tokens/s", "FLOP", "USD", ""
    std::string explanation;
    std::string source;
};

// Which of the three peaks a measurement reports first counts a component:
// PyTorch's allocations (torch.cuda.max_memory_allocated), the caching
// allocator's reserve beyond them (max_memory_reserved), or memory outside
// the allocator that only the device shows (nvidia-smi).
enum class PeakLevel { Allocated, Reserved, Device };
PeakLevel peakLevel(std::string_view componentKey);
std::string_view peakKey(PeakLevel level); // "peak_allocated", "peak_reserved", "device_used"
std::string_view peakLabel(PeakLevel level); // "Peak allocated", ...

// The three peaks per GPU; each includes the ones before it.
struct PeakBytes {
    double allocated = 0;
    double reserved = 0;
    double deviceUsed = 0; // = PlanResult::perGpuBytes

    double at(PeakLevel level) const;
};
PeakBytes peaksOf(const std::vector<MemoryComponent>& memory);

// The moments of a run whose peaks differ. The memory components describe
// forward and backward (the step); the optimizer step updates with every
// gradient alive and no activations; the other phases are what our trainer
// holds while it loads the model, writes a checkpoint and exports
// (docs/PLANNER.md, 4.11 and 4.12); evaluation is the Hugging Face
// Trainer's forward without grad over a batch of its own (4.15).
enum class Phase { Load, Step, OptimizerStep, Evaluation, Checkpoint, Export };
// "load", "step", "optimizer_step", "evaluation", "checkpoint", "export"
std::string_view phaseKey(Phase phase);
// "Load", "Forward and backward", "Optimizer step", "Evaluation", "Checkpoint", "Export"
std::string_view phaseLabel(Phase phase);

struct PhasePeak {
    Phase phase = Phase::Step;
    double bytes = 0; // per GPU (per rank on CPUs), at the device_used level
    std::string explanation; // what the phase holds beyond the step's states
    // What PyTorch's allocator holds at the phase's peak: bytes less the
    // memory outside it (CUDA context, NCCL, the process).
    double allocated = 0;
};

struct ScalingPoint {
    int nodes = 1;
    double tokensPerSecond = 0;
    double efficiency = 1; // tokens/s over (nodes x the 1-node tokens/s)
    bool fits = true;
};

struct [[nodiscard]] PlanResult {
    // Model
    std::int64_t paramsTotal = 0;
    std::int64_t paramsTrainable = 0;
    std::string modelName;

    // Resolved setup (after VM and precision are applied)
    std::string gpuId;
    std::string vmSize; // empty when planned for a bare GPU
    int gpusPerNode = 1;
    int nodes = 1;
    int worldSize = 1;
    std::string precision; // the precision actually planned (toString(Precision))
    std::string calibration; // "calibrated by 3 runs on H100-SXM", empty when none applies

    // Memory per GPU at the training step, component by component; the
    // components sum to peaks.deviceUsed.
    std::vector<MemoryComponent> memory;
    PeakBytes peaks;
    // Every phase's peak, in run order: the step alone for the reference
    // engines, load, step, checkpoint and export for Tunebench's trainer.
    std::vector<PhasePeak> phases;
    double perGpuBytes = 0; // the largest phase's peak: what "fits" is judged by
    // What the optimizer's update allocates beyond its states, per GPU
    // (foreach AdamW's variance-sized temporaries, Adafactor's per tensor);
    // part of the optimizer step's phase. docs/PLANNER.md 4.12.
    double optimizerTemporaryBytes = 0;
    double usableBytes = 0; // the GPU's usable memory
    double headroomBytes = 0; // usable - perGpu (negative: short by that much)
    bool fits = false;
    double cpuBytesPerNode = 0; // CPU RAM for offloaded states, per node
    std::string cpuExplanation;
    double vmRamBytes = 0; // the VM's RAM, 0 when unknown
    // Tunebench's trainer only (0 for the reference engines): the host
    // memory a node's ranks need while they load the model onto their GPUs
    // (on CPUs that is the load phase itself), and what one checkpoint and
    // the export write to disk. docs/PLANNER.md 4.11.
    double loadHostBytesPerNode = 0;
    std::string loadHostExplanation;
    double checkpointDiskBytes = 0;
    double exportDiskBytes = 0;
    std::string diskExplanation;
    double modelStatesBytes =
        0; // weights + gradients + optimizer + ZeRO-3 gather (DeepSpeed's "model states")

    // Throughput, time and cost
    std::vector<Figure> figures;
    double flopsPerToken = 0;
    double tokensPerSecond = 0; // whole job
    double samplesPerSecond = 0;
    double stepSeconds = 0; // one optimizer step (all micro-batches)
    double trainingTokens = 0;
    double optimizerSteps = 0;
    double hours = 0;
    bool costKnown = false;
    double costUsd = 0;

    // Things the user should know (precision fallback, missing price, a
    // framework that does not support the combination).
    std::vector<std::string> warnings;

    double categoryBytes(MemoryCategory c) const;
    const PhasePeak* peakPhase() const; // the phase that sets perGpuBytes
    // A training step's peak at a level: forward and backward or the
    // optimizer's update, what a run measures over its steps. The caching
    // allocator keeps what backward reserved, so the update raises the
    // reserve only by allocating beyond it.
    double stepPeakAt(PeakLevel level) const;
    const MemoryComponent* component(std::string_view key) const;
    const Figure* figure(std::string_view key) const;
};

} // namespace tb::plan
