#pragma once

#include "common/error.h"

#include <string>
#include <vector>

namespace tb::launch {

// Where this node's ranks sit in the job, as torchrun describes it: nnodes
// nodes of nprocPerNode ranks each; this node is nodeRank; rank 0 listens on
// masterAddr:masterPort.
struct WorldLayout {
    int nnodes = 1;
    int nprocPerNode = 1;
    int nodeRank = 0;
    std::string masterAddr = "127.0.0.1";
    int masterPort = 0; // 0: pick a free port (one node only)
    // The job's id (torchrun's --rdzv-id), TORCHELASTIC_RUN_ID for every
    // rank: two jobs handed one port tell each other apart by it. Empty: a
    // new one on one node (newRunId), "none" across nodes, as torchrun.
    std::string runId;

    int worldSize() const { return nnodes * nprocPerNode; }
    int globalRank(int localRank) const { return nodeRank * nprocPerNode + localRank; }
};

inline constexpr int kMaxProcsPerNode = 1024;
inline constexpr int kMaxNodes = 4096;
inline constexpr std::size_t kMaxRunIdLength = 128;

// A run id names registry files and log files (run_registry.h): 1 to
// kMaxRunIdLength letters, digits, '.', '_' and '-', not starting with '.',
// so it never names a folder or leaves the registry. Checked where an id is
// given (--run-id) and where one is read back (a registry entry).
common::Status checkRunId(const std::string& runId);

// Every problem, each naming the field ("nproc: got 0, expected 1 to 1024").
// A port of 0 with more than one node is an error: the other nodes could not
// know which port this one picked.
common::Status validateLayout(const WorldLayout& layout);

// A run id no other job on this machine has: 12 random hex digits.
std::string newRunId();

// The variables a rank reads to join the job, as "NAME=value": MASTER_ADDR,
// MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK,
// GROUP_RANK (torchrun's name for the node rank), TORCHELASTIC_RUN_ID.
std::vector<std::string> rankEnvironment(const WorldLayout& layout, int localRank);

// `base` with every variable of `overrides` replacing one of the same name.
std::vector<std::string> mergeEnvironment(
    const std::vector<std::string>& base, const std::vector<std::string>& overrides);

// This process's environment as "NAME=value" entries.
std::vector<std::string> currentEnvironment();

// The ranks' environment with their run secret (common/run_secret.h): the
// one `environment` already holds (a node of a multi-node launch gets it over
// SSH, a user may give it), or a new one for a job on one node. A job across
// nodes started by hand without one is joined without a secret: `warning`
// then says so. An Error for a malformed secret (its value is not shown).
common::Result<std::vector<std::string>> withRunSecret(
    std::vector<std::string> environment, const WorldLayout& layout, std::string& warning);

} // namespace tb::launch
