#pragma once

#include "common/error.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tb::launch {

struct FileFact {
    std::string path; // absolute
    int64_t bytes = -1; // -1: missing

    bool operator==(const FileFact&) const = default;
};

// What a node of a multi-node job has for a run: the build it would run,
// whether the run config reads there, the inputs it names and their sizes,
// its GPUs and the free disk where the run writes. `tunebench-cli node-check`
// prints this as JSON on each node; the launching machine compares it with
// its own (remote::preflightNodes).
struct NodeFacts {
    std::string hostName;
    std::string version;
    std::string buildId;
    std::string configError; // empty: the run config is valid there
    std::string device; // the run config's: "cpu", "cuda" or "auto"
    // About what the run writes (checkpoints and export), from the model's
    // size: full-parameter checkpoints hold fp32 weights and both AdamW
    // moments (12 bytes a parameter, 6x a bf16 model) keep_last + 1 times.
    int64_t diskNeededBytes = 0;
    std::string runDir; // the run config's output.dir, absolute
    std::vector<FileFact> inputs; // the run config, the model folder's files, the data files
    int gpuCount = -1; // -1: nvidia-smi absent or failed
    std::string gpuNote;
    int64_t freeDiskBytes = -1; // where the run writes (its nearest existing folder)
};

// Where the ranks write: `configured` (the run config's output.dir), unless
// the trainer's own --output among `trainerArguments` (after `--`) says
// otherwise.
std::string trainerOutputDir(
    const std::vector<std::string>& trainerArguments, const std::string& configured);

// Facts of this machine for the run config at `configPath` (absolute).
NodeFacts collectNodeFacts(const std::string& configPath);

nlohmann::json nodeFactsToJson(const NodeFacts& facts);
// `where` names the machine in errors about a reply that is not NodeFacts.
common::Result<NodeFacts> nodeFactsFromJson(const std::string& text, const std::string& where);

// Every way `node` differs from `reference` (this machine) that would break
// the run on it, each a sentence naming the node; `slots` the ranks it is to
// run.
std::vector<std::string> compareNodeFacts(
    const NodeFacts& reference, const NodeFacts& node, const std::string& nodeName, int slots);

} // namespace tb::launch
