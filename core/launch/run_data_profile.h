#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "data/tokenized_example.h"
#include "plan/plan_input.h"

#include <cstdint>
#include <span>
#include <string>

// The user's own data as the planner needs it: the rows a run trains on,
// batched as the trainer batches them (docs/PLANNER.md 4.13).
namespace tb::launch {

// One epoch of `rows` over `worldSize` ranks: every rank's micro-batches
// from the trainer's sampler, padded to their longest row (packed rows are
// full but for the last). `source` names the files, for explanations.
plan::DataProfile profileRows(std::span<const data::TokenizedExample> rows,
    const config::RunConfig& config, int worldSize, std::string source);

// The plan of `config` on its own data: the profile replaces the nominal
// dataset, and the run's epochs (or max_steps) its passes over it.
void applyDataProfile(
    plan::PlanInput& input, const config::RunConfig& config, plan::DataProfile profile);

// Reads, tokenizes and packs or truncates the run's training data exactly
// as the trainer does (data::prepareData with the run's tokenizer), then
// profiles it. Errors name the file and what is wrong, as the run's would.
common::Result<plan::DataProfile> profileRunData(const config::RunConfig& config, int worldSize);

// The run config at `path` as our trainer runs it, one rank on one node; a
// CUDA run keeps the GPU (or VM) that `base` names, since a run config names
// none, and the dataset and epochs of `base`. With ownData its training data
// is read and profiled with the run's own batch settings, and replaces them:
// what `plan --from-run` and the Planner page's "Plan a run" plan.
common::Result<plan::PlanInput> planInputOfRunFile(
    const std::string& path, const plan::PlanInput& base, bool ownData);

} // namespace tb::launch
