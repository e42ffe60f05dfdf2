#pragma once

#include "common/error.h"
#include "data/sampler.h"
#include "train/adamw.h"
#include "train/flat_parameters.h"

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace tb::train {

// What a checkpoint holds besides tensors: enough to continue a run exactly.
struct TrainerState {
    std::int64_t step = 0; // optimizer steps done
    data::DataPosition dataPosition; // the next micro-batch of the training stream
    torch::Tensor dropoutGeneratorState; // uint8, LibTorch's CPU generator state
    std::int64_t tokensSeen = 0;
    double trainSeconds = 0.0;
    std::string method; // "full", "lora", "qlora"
    std::string configYaml; // the resolved config the run had (warned about when it differs)
};

// A checkpoint folder, step-<8 digits> in the run's checkpoints/ folder:
//   trainable.safetensors  master weights of every trainable parameter, by name
//   optimizer.safetensors  AdamW moments: exp_avg.<name>, exp_avg_sq.<name>
//   trainer_state.json     step, optimizer step, data position, RNG state, config
//   adapter/               (LoRA) the adapter in PEFT's layout, usable as is
// written as a whole through a StagingDirectory; a folder that exists is complete.
std::string checkpointFolderName(std::int64_t step);

// Writes the checkpoint for `state.step` into `checkpointsDir`; `extra` may
// add files to the staging folder before it is committed. Returns the bytes written.
common::Result<std::int64_t> writeCheckpoint(const std::string& checkpointsDir,
    FlatParameters& parameters, FlatAdamW& optimizer, const TrainerState& state,
    const std::function<common::Status(const std::string& stagingDir)>& extra = {});

// Restores parameters (master and model copy), optimizer moments and step
// from `dir`, and returns the trainer state. The parameter names, shapes and
// dtypes must match the run's exactly; every mismatch is an Error naming the
// file and the tensor.
common::Result<TrainerState> readCheckpoint(
    const std::string& dir, FlatParameters& parameters, FlatAdamW& optimizer);

// Complete checkpoints in `checkpointsDir`, oldest first (full paths).
std::vector<std::string> listCheckpoints(const std::string& checkpointsDir);

// Deletes all but the newest `keep`.
void pruneCheckpoints(const std::string& checkpointsDir, int keep);

} // namespace tb::train
