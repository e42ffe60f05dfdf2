#pragma once

#include "common/error.h"
#include "dist/communicator.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tb::dist {

// Where this process sits in the job, read from torchrun's variables
// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// NODE_RANK or GROUP_RANK, TORCHELASTIC_RUN_ID, TORCHELASTIC_USE_AGENT_STORE)
// and TUNEBENCH_RUN_SECRET.
struct RankEnvironment {
    // Which job the ranks belong to (torchrun's --rdzv_id; "none" when not
    // given, as torchrun's default): two jobs that meet on one MASTER_PORT
    // tell each other apart by it instead of mixing their ranks.
    std::string runId = "none";
    std::string masterAddr = "127.0.0.1";
    int masterPort = 0;
    int rank = 0;
    int worldSize = 1;
    int localRank = 0;
    int localWorldSize = 1;
    int nodeRank = 0;
    // TORCHELASTIC_USE_AGENT_STORE=True: the launcher (torchrun, accelerate)
    // serves the store and rank 0 must not.
    bool agentServesStore = false;
    // TUNEBENCH_RUN_SECRET (common/run_secret.h): every rank proves it at the
    // rendezvous and rank 0 proves it back (dist/join_proof.h). Empty: the
    // job is joined without one, as under torchrun.
    std::string runSecret;

    bool distributed() const { return worldSize > 1; }
    int nodeCount() const { return worldSize / localWorldSize; }
};

// Reads the variables from `environment` (NAME -> value; the process's own
// when empty). None set: a world of one. WORLD_SIZE > 1 with a missing or
// malformed variable, a rank outside [0, WORLD_SIZE), or WORLD_SIZE not a
// multiple of LOCAL_WORLD_SIZE: an Error naming the variable, its value and
// what was expected.
common::Result<RankEnvironment> readRankEnvironment(
    const std::map<std::string, std::string>& environment = {});

enum class Backend { Gloo, Nccl };

struct RendezvousOptions {
    Backend backend = Backend::Gloo;
    double timeoutSeconds = 300.0; // the rendezvous and every collective
    // A rank that has not shown a sign of life for this long is reported
    // dead when a collective fails (see World).
    double heartbeatSeconds = 1.0;
    // NCCL: the CUDA device index of this rank's GPU. Every group is bound
    // to it, so NCCL never guesses a rank's device from its rank number
    // (which is wrong where each task sees only its own GPU).
    int cudaDevice = -1;
};

// The process groups of a job: every rank, the ranks of this node (the shard
// group of HYBRID_SHARD) and the ranks with this local rank on every node
// (its replica group).
struct World {
    RankEnvironment environment;
    std::shared_ptr<Communicator> all;
    std::shared_ptr<Communicator> node;
    std::shared_ptr<Communicator> replicas;
    // For the run's log: what the user should know of how the job was joined
    // (rank 0's store listening on every interface).
    std::vector<std::string> warnings;
};

// Joins the job: rank 0 serves a TCPStore on MASTER_PORT and writes the run
// id there, every rank connects, checks the run id and announces itself,
// then the Gloo (or NCCL) groups are made. Every key of the job lives under
// its run id, so a rank of another job that reached this store by mistake
// (two jobs given one port) fails, naming both run ids, without touching
// this job's keys.
// Waits at most timeoutSeconds for every rank; a rank that never arrives
// makes every rank that did fail with an Error that names the missing
// ranks. While the World lives, a heartbeat thread keeps this rank's
// liveness key fresh in the store, and a failed collective reports the
// ranks whose heartbeat stopped ("rank 2 stopped responding").
common::Result<World> rendezvous(
    const RankEnvironment& environment, const RendezvousOptions& options);

} // namespace tb::dist
