#pragma once

#include "common/error.h"
#include "config/run_config.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

// The fine-tuning loop behind `tunebench-cli train run.yaml`. No LibTorch in
// this header: the CLI and, later, the launcher include it.
namespace tb::train {

enum class RunStatus { Completed, Stopped, Failed };
std::string_view runStatusName(RunStatus status); // "completed", "stopped", "failed" (EVENTS.md)

// What the trainer tells its front end as it goes (the CLI prints a line).
struct TrainerProgress {
    enum class Kind { Setup, Step, Eval, Checkpoint, Export, Warning };
    Kind kind = Kind::Setup;
    std::string message; // Setup, Checkpoint, Export, Warning; Eval of DPO: a sentence
    std::int64_t step = 0;
    std::int64_t totalSteps = 0;
    double loss = 0.0; // Step: training loss; Eval: validation loss
    double learningRate = 0.0;
    double gradNorm = 0.0;
    double tokensPerSecond = 0.0;
    double stepSeconds = 0.0;
    double etaSeconds = 0.0;
    std::int64_t residentBytes = -1;
};

struct TrainerOptions {
    // Continue from the newest checkpoint in <output.dir>/checkpoints, or
    // from this checkpoint folder.
    bool resume = false;
    std::string resumeFrom;
    // Start the LoRA matrices from this PEFT adapter folder (same rank and
    // targets as the config) instead of PEFT's initialisation.
    std::string initAdapter;
    // With resume: write the exports (adapter, merged) from the checkpoint
    // and stop, training nothing.
    bool exportOnly = false;
    int threads = 0; // intra-op threads; 0: launch::rankComputeThreads's default
    // Set (by a signal handler) to stop at the next step boundary with a
    // checkpoint; also cancels data preparation.
    const std::atomic<bool>* stopRequested = nullptr;
    std::function<void(const TrainerProgress&)> progress;
};

struct [[nodiscard]] TrainOutcome {
    RunStatus status = RunStatus::Completed;
    std::string message;
    std::int64_t steps = 0; // optimizer steps done in all (resumed ones included)
    std::int64_t totalSteps = 0;
    double lastLoss = 0.0;
    std::optional<double> firstEvalLoss; // validation loss before training (fresh runs)
    std::optional<double> lastEvalLoss;
    std::string runDir;
    std::string lastCheckpoint; // empty when none was written
    std::string adapterDir; // exports, empty when not written
    std::string mergedDir;
    double seconds = 0.0; // wall time of this process's training loop
};

// Runs a fine-tune from a loaded, path-checked config. The run folder
// (output.dir) receives config.yaml, events.jsonl (docs/EVENTS.md),
// checkpoints/ and the exports. An Error means nothing was trained (a model,
// tokenizer, data or checkpoint that cannot be used); a run that started
// and failed (a non-finite loss) returns status Failed with its message.
common::Result<TrainOutcome> runTraining(
    const config::RunConfig& config, const TrainerOptions& options = {});

} // namespace tb::train
