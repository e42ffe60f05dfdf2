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
    data::DataPosition dataPosition; // the next micro-batch of this rank's training stream
    // This rank's dropout generator: LibTorch's state of a generator of
    // `dropoutGeneratorDevice` ("cpu" or "cuda"; the two are of other sizes
    // and cannot be loaded into each other).
    torch::Tensor dropoutGeneratorState; // uint8
    std::string dropoutGeneratorDevice = "cpu";
    std::int64_t tokensSeen = 0;
    double trainSeconds = 0.0;
    std::string method; // "full", "lora", "qlora"
    std::string configYaml; // the resolved config the run had (warned about when it differs)
    // Read back: what could not be continued exactly (another world size).
    std::vector<std::string> warnings;
};

// Who writes and reads a checkpoint in a run of several ranks. One process:
// the defaults.
struct CheckpointRank {
    int rank = 0;
    int worldSize = 1;
    // This rank holds shard `rank` of the model states and no lower rank
    // holds the same (replicas of DDP or of another node do not write).
    bool writesShard = true;
    int shardCount = 1; // shards of the model states (FlatParameters::shard().count)
    std::function<void()> barrier; // every rank; empty for one process
};

// A checkpoint folder, step-<8 digits> in the run's checkpoints/ folder:
//   rank-<5 digits>.safetensors  per rank: its dropout generator and, for the
//                          ranks that write a shard, unit.<id>.master,
//                          unit.<id>.exp_avg, unit.<id>.exp_avg_sq (that shard
//                          of each unit's flat buffer, padding included)
//   trainer_state.json     step, optimizer step, data position, world size,
//                          shard count, the unit layout (names, shapes,
//                          offsets), config
//   adapter/               (LoRA) the adapter in PEFT's layout, usable as is
// Ranks write their files into a shared parts folder, then rank 0 moves them
// into a StagingDirectory and commits it: a folder that exists is complete.
// The folder is read back at any world size and any sharding: each rank
// takes its range of each unit from the shards that cover it.
std::string checkpointFolderName(std::int64_t step);

// Writes the checkpoint for `state.step` into `checkpointsDir` (every rank
// calls it); `extra` (rank 0) may add files to the staging folder before it
// is committed. Returns the bytes written (rank 0: the whole folder).
common::Result<std::int64_t> writeCheckpoint(const std::string& checkpointsDir,
    FlatParameters& parameters, FlatAdamW& optimizer, const TrainerState& state,
    const CheckpointRank& who = {},
    const std::function<common::Status(const std::string& stagingDir)>& extra = {});

// Restores this rank's master shards, optimizer moments and step from
// `dir`, and returns the trainer state (data position converted to this
// world size). The unit layout (parameter names, shapes) and the dtypes must
// match the run's; every mismatch is an Error naming the file and the
// tensor. The model's copy is refreshed only without sharding; a sharded
// run gathers it.
common::Result<TrainerState> readCheckpoint(const std::string& dir, FlatParameters& parameters,
    FlatAdamW& optimizer, const CheckpointRank& who = {});

// Complete checkpoints in `checkpointsDir`, oldest first (full paths).
std::vector<std::string> listCheckpoints(const std::string& checkpointsDir);

// Deletes all but the newest `keep`.
void pruneCheckpoints(const std::string& checkpointsDir, int keep);

// A run resumed from a checkpoint older than the newest ones continues
// another timeline: the checkpoints of `checkpointsDir` after `step` are moved
// into checkpoints/abandoned-<UTC time>/ (kept whole, never pruned or
// resumed by --resume), so pruning cannot delete the new timeline's
// checkpoints for being older and --resume picks the new timeline's newest.
// Returns that folder, empty when nothing was newer.
common::Result<std::string> setAsideCheckpointsAfter(
    const std::string& checkpointsDir, std::int64_t step);

} // namespace tb::train
