#include "dist/rendezvous.h"

#include "common/master_listener.h"
#include "common/run_secret.h"
#include "dist/arrival.h"
#include "dist/communicators.h"
#include "dist/join_proof.h"
#include "dist/run_identity.h"

#include <algorithm>

namespace tb::dist {
namespace {

using Clock = std::chrono::steady_clock;

// The groups of HYBRID_SHARD: ranks are numbered node by node, so a node's
// ranks are consecutive and a replica group takes one rank from each node.
GroupDescription worldGroup(const RankEnvironment& environment)
{
    return {"world", "group/world/", environment.rank, environment.worldSize};
}

GroupDescription nodeGroup(const RankEnvironment& environment)
{
    const std::string node = std::to_string(environment.nodeRank);
    return {"node " + node, "group/node/" + node + "/", environment.localRank,
        environment.localWorldSize};
}

GroupDescription replicaGroup(const RankEnvironment& environment)
{
    const std::string local = std::to_string(environment.localRank);
    return {"replicas of local rank " + local, "group/replicas/" + local + "/",
        environment.nodeRank, environment.nodeCount()};
}

common::Status checkOptions(const RendezvousOptions& options)
{
    if (!(options.timeoutSeconds > 0.0))
        return common::Error{"rendezvous: timeoutSeconds is "
                + std::to_string(options.timeoutSeconds)
                + ", expected a positive number of seconds",
            {}};
    if (!(options.heartbeatSeconds > 0.0))
        return common::Error{"rendezvous: heartbeatSeconds is "
                + std::to_string(options.heartbeatSeconds)
                + ", expected a positive number of seconds",
            {}};
#ifndef USE_C10D_NCCL
    if (options.backend == Backend::Nccl)
        return common::Error{"backend nccl: this LibTorch was built without CUDA/NCCL",
            "use the gloo backend on this machine"};
#endif
    return common::Ok{};
}

// Rank 0 serves the store, on a socket bound to MASTER_ADDR's address
// (common/master_listener.h), unless the launcher's agent serves it (torchrun);
// every rank (rank 0 too) is a client of it. A client
// retries the connection until the rendezvous timeout, so ranks may start in
// any order.
common::Result<StoreHandle> connectStore(
    const RankEnvironment& environment, double timeoutSeconds, std::vector<std::string>& warnings)
{
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = static_cast<std::uint16_t>(environment.masterPort);
    storeOptions.isServer = environment.rank == 0 && !environment.agentServesStore;
    storeOptions.waitWorkers = false; // awaitAllRanks waits, and names who is missing
    storeOptions.timeout = toMilliseconds(timeoutSeconds);
    if (storeOptions.isServer) {
        auto listener = common::listenOnMasterAddress(
            environment.masterAddr, environment.masterPort, "rank 0", "the store");
        if (!listener)
            return common::Error{rendezvousPlace(environment) + ": " + listener.error().message,
                listener.error().hint};
        storeOptions.masterListenFd = listener->fd;
        if (!listener->warning.empty())
            warnings.push_back(listener->warning);
    }
    try {
        StoreHandle store =
            c10::make_intrusive<c10d::TCPStore>(environment.masterAddr, storeOptions);
        return store;
    } catch (const std::exception& error) {
        if (storeOptions.isServer)
            return common::Error{rendezvousPlace(environment)
                    + ": rank 0 could not serve the store on port "
                    + std::to_string(environment.masterPort) + ": " + describeTorchError(error),
                "is another job using MASTER_PORT?"};
        return common::Error{rendezvousPlace(environment) + " timed out after "
                + formatSeconds(timeoutSeconds)
                + ": could not reach the store of rank 0: " + describeTorchError(error),
            "did rank 0 start, and is MASTER_ADDR reachable from this node?"};
    }
}

// Rank 0 posts its challenge (join_proof.h) before the ranks arrive, so that every rank
// that arrived finds it; the proofs follow the arrival.
common::Status arriveAndProve(c10d::Store& store, const RankEnvironment& environment,
    double timeoutSeconds, std::chrono::steady_clock::time_point deadline)
{
    try {
        std::string challenge;
        if (environment.rank == 0)
            challenge = postJoinChallenge(store, environment);
        if (auto arrived = awaitAllRanks(store, environment, timeoutSeconds, deadline); !arrived)
            return arrived.error();
        if (environment.rank == 0)
            return admitRanks(store, environment, challenge, deadline);
        return joinWithProof(store, environment, deadline);
    } catch (const std::exception& error) {
        return common::Error{rendezvousPlace(environment)
                + ": the store went away while the ranks proved the run secret ("
                + describeTorchError(error) + ")",
            {}};
    }
}

std::shared_ptr<Communicator> solo(const std::string& name)
{
    return makeSelfCommunicator(name);
}

} // namespace

common::Result<World> rendezvous(
    const RankEnvironment& environment, const RendezvousOptions& options)
{
    if (auto valid = checkOptions(options); !valid)
        return valid.error();
    World world;
    world.environment = environment;
    if (!environment.distributed()) {
        world.all = solo("world");
        world.node = solo("node 0");
        world.replicas = solo("replicas of local rank 0");
        return world;
    }

    const auto deadline = Clock::now() + toMilliseconds(options.timeoutSeconds);
    auto served = connectStore(environment, options.timeoutSeconds, world.warnings);
    if (!served)
        return served.error();
    if (environment.rank == 0) {
        try {
            announceRunId(**served, environment);
        } catch (const std::exception& error) {
            return common::Error{rendezvousPlace(environment)
                    + ": could not write the run id in the store: " + describeTorchError(error),
                {}};
        }
    } else if (auto sameJob = checkRunId(**served, environment, deadline); !sameJob) {
        return sameJob.error();
    }
    const std::string prefix = jobKeyPrefix(environment);
    const StoreHandle store = c10::make_intrusive<c10d::PrefixStore>(prefix, *served);
    if (auto joined = arriveAndProve(*store, environment, options.timeoutSeconds, deadline);
        !joined)
        return joined.error();
    if (environment.runSecret.empty())
        world.warnings.push_back(std::string("the ranks joined without a run secret (")
            + common::kRunSecretVariable
            + "), as under torchrun: a process that reaches the master port could have joined in a "
              "rank's place "
              "(docs/LAUNCH.md, \"What listens\")");

    std::shared_ptr<Liveness> liveness;
    try {
        Liveness::Options livenessOptions;
        livenessOptions.host = environment.masterAddr;
        livenessOptions.port = environment.masterPort;
        livenessOptions.storePrefix = prefix;
        livenessOptions.runId = environment.runId;
        livenessOptions.runSecret = environment.runSecret;
        livenessOptions.rank = environment.rank;
        livenessOptions.worldSize = environment.worldSize;
        livenessOptions.heartbeatSeconds = options.heartbeatSeconds;
        livenessOptions.timeoutSeconds = options.timeoutSeconds;
        livenessOptions.backendName = options.backend == Backend::Gloo ? "Gloo" : "NCCL";
        liveness = std::make_shared<Liveness>(livenessOptions, store);
    } catch (const std::exception& error) {
        return common::Error{rendezvousPlace(environment)
                + ": could not start the heartbeat: " + describeTorchError(error),
            {}};
    }

    // Every rank makes the groups in the same order; each blocks only on its
    // own members, so the disjoint node (and replica) groups cannot deadlock.
    auto all = makeProcessGroupCommunicator(
        worldGroup(environment), environment, options, store, liveness);
    if (!all)
        return all.error();
    auto node =
        makeProcessGroupCommunicator(nodeGroup(environment), environment, options, store, liveness);
    if (!node)
        return node.error();
    auto replicas = makeProcessGroupCommunicator(
        replicaGroup(environment), environment, options, store, liveness);
    if (!replicas)
        return replicas.error();
    world.all = *all;
    world.node = *node;
    world.replicas = *replicas;
    // A rank may finish making its groups before its peers have connected
    // theirs (Gloo pairs connect from both ends); one barrier over the world
    // lets no rank go on, or die, while another still connects to it.
    try {
        if (environment.worldSize > 1)
            world.all->barrier();
    } catch (const CommunicationError& error) {
        return common::Error{rendezvousPlace(environment) + ": " + error.what(), {}};
    }
    return world;
}

} // namespace tb::dist
