#pragma once

#include "common/error.h"
#include "launch/cancel_token.h"
#include "launch/hostfile.h"
#include "launch/node_facts.h"
#include "launch/run_registry.h"
#include "metrics/event.h"
#include "metrics/run_history.h"
#include "remote/remote_event_feed.h"
#include "remote/sftp_transfer.h"
#include "remote/ssh_session.h"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::remote {

// A run across machines started over SSH (docs/LAUNCH.md): a preflight of
// every node in parallel, one detached `tunebench-cli launch` per node, rank
// 0's events followed over SFTP, and every node stopped when one fails or a
// stop is asked for.
struct ClusterOptions {
    std::string configPath; // absolute; the same path on every node
    std::vector<launch::HostSlots> hosts; // node 0 first
    std::string remoteCli; // tunebench-cli on the nodes (absolute)
    std::string identityFile; // empty: ~/.ssh/config's, ssh-agent, ~/.ssh keys
    std::string knownHostsFile; // empty: ~/.ssh/known_hosts
    std::string masterAddr; // empty: node 0's host as the hostfile names it
    int masterPort = 0; // 0: a port free on node 0
    std::string runId; // empty: a new one
    double sshTimeoutSeconds = 15.0;
    double portCheckSeconds = 10.0;
    double graceSeconds = 10.0; // a node's ranks get this long to checkpoint and stop
    double pollSeconds = 1.0;
    // Copy the run config, the model's files and the data files to every
    // node first (the same absolute paths), skipping files already equal.
    bool sync = false;
    std::vector<std::string> trainerArguments; // after RUN.yaml, for every rank
};

// CheckFailed: the preflight found a problem on the node (nothing started).
enum class NodeState {
    Connecting,
    Checked,
    CheckFailed,
    Starting,
    Running,
    Unreachable,
    Exited,
    Vanished
};
std::string_view toString(NodeState state);
std::optional<NodeState> parseNodeState(std::string_view text);

// A node's change of state, with what a watcher acts on kept apart from the
// words for people: the exit code, the run folder, the preflight's problems.
struct NodeUpdate {
    NodeUpdate() = default;
    NodeUpdate(int nodeRank, std::string hostName, NodeState newState, std::string text = {})
        : node(nodeRank)
        , host(std::move(hostName))
        , state(newState)
        , detail(std::move(text))
    {
    }

    int node = 0;
    std::string host; // [user@]host[:port], as the hostfile names it
    NodeState state = NodeState::Connecting;
    std::string detail; // one line for people
    std::optional<int> exitCode; // Exited
    std::string runFolder; // Running: where the node's run writes
    std::string log; // Running: the node's launcher log
    std::vector<std::string> problems; // CheckFailed: every problem found, one a line
};

// What the launch reports, from the thread that runs it.
class ClusterSink {
public:
    virtual ~ClusterSink() = default;
    virtual void nodeState(const NodeUpdate& update) = 0;
    // The preflight's problems, every node's and the launch's own (the
    // master port), when it refuses to start anything.
    virtual void preflightFailed(const std::vector<std::string>& problems) = 0;
    // Rank 0's events as they arrive (with the history they were folded into).
    virtual void runEvent(const metrics::Event& event, const metrics::RunHistory& history) = 0;
    virtual void note(const std::string& line) = 0;
    // --sync's copy to a node, at most twice a second per node.
    virtual void transferProgress(
        int node, const std::string& host, const TransferProgress& progress) = 0;
};

enum class ClusterOutcome { Succeeded, NodeFailed, Stopped, Detached };

struct [[nodiscard]] ClusterReport {
    ClusterOutcome outcome = ClusterOutcome::Succeeded;
    std::string runId;
    std::string message; // which node failed, its exit status and last error
    std::vector<launch::RegistryEntry> nodes; // by node rank, their last state
    double stopSeconds = 0; // from the decision to stop to every node ended
    // Where rank 0's events were read to: a follower that goes on from here
    // (monitor --from-offset) loses and doubles no event.
    uint64_t eventOffset = 0;
    uint64_t eventLine = 1;
};

class ClusterLaunch {
public:
    explicit ClusterLaunch(ClusterOptions options);
    ~ClusterLaunch();

    // Connects to every node at once and checks what breaks multi-node jobs
    // before anything starts: host key, authentication, the same build, the
    // run config and its inputs, GPUs for the slots, free disk, the master
    // port free on node 0 and reachable from every other node. One Error
    // listing every problem, each naming its host.
    common::Status preflight(ClusterSink& sink);

    // Starts each node's launcher (node 0 first) and follows them to the end:
    // when one fails every other is stopped gracefully (SIGTERM, SIGKILL after
    // the grace), and `cancel` stops them all the same way; `detach` leaves
    // them running (the report says where the events were read to). Errors
    // only when nothing could start; a started run always ends in a report.
    common::Result<ClusterReport> run(
        ClusterSink& sink, const launch::CancelToken& cancel, const launch::CancelToken& detach);

    // Connects to the nodes of the run options.runId started earlier (the
    // same hostfile) and reads each one's registry entry; events are read on
    // from `eventOffset`. Then follow() takes over as run() would.
    common::Status attach(ClusterSink& sink, uint64_t eventOffset = 0, uint64_t eventLine = 1);
    // Follows started (or attached) nodes to their end, as run() does;
    // `stopAtOnce` begins with the graceful stop of every node.
    common::Result<ClusterReport> follow(ClusterSink& sink, const launch::CancelToken& cancel,
        const launch::CancelToken& detach, bool stopAtOnce);

    const ClusterOptions& options() const { return m_options; }

private:
    struct Node;
    // One node's preflight (on one of at most 32 workers): every problem found.
    std::vector<std::string> checkNode(
        Node& node, const launch::NodeFacts& here, ClusterSink& sink);
    common::Result<launch::NodeFacts> nodeFacts(Node& node);
    common::Status syncInputs(Node& node, const launch::NodeFacts& here, ClusterSink& sink);
    common::Status checkMasterPort(ClusterSink& sink);
    // With several nodes: every node sees node 0's run folder, where every
    // rank writes its part of a checkpoint. The problems, each naming a node.
    std::vector<std::string> checkSharedRunFolder();
    common::Status startNodes(ClusterSink& sink);
    // Runs `work` for every node at once (a bounded pool), so one node's
    // network waits (at most the SSH timeout) never add up over nodes, then
    // tells the sink each node's news from this thread.
    void forEachNode(const std::function<void(Node&)>& work, ClusterSink& sink);
    void pollNode(Node& node);
    // Connects to the node and reads its entry of the run: empty, or the problem.
    std::string attachNode(Node& node);
    // A session to the node: the one it has, or the one a connect in the
    // background made. Else starts such a connect (at most every few seconds
    // unless `now`) and returns false without waiting for it.
    bool ensureSession(Node& node, bool now);
    SshTarget connectTarget(const Node& node) const;
    void dropSession(Node& node);
    void followEvents(ClusterSink& sink);
    void followEventsToEnd(ClusterSink& sink);
    void startFeed();
    void deliverEvents(std::vector<RemoteEventFeed::Batch> batches, ClusterSink& sink);
    void eventsUnreadable(const std::string& problem, ClusterSink& sink);
    // Every node still running gets SIG`signal` at once; one that cannot be
    // reached now gets it on the first poll that reaches it.
    void signalNodes(const std::string& signal, ClusterSink& sink);
    void sendPendingSignal(Node& node, bool now);
    bool allEnded() const;

    struct StopReason {
        ClusterOutcome outcome;
        std::string message;
    };
    // A failed node, a node stopped by someone else, or a stop asked for.
    std::optional<StopReason> reasonToStop(const launch::CancelToken& cancel) const;
    void beginStop(StopReason reason, ClusterSink& sink);
    bool stopOver(ClusterSink& sink);
    ClusterReport report(bool detached) const;
    std::string launchCommand(const Node& node) const;

    ClusterOptions m_options;
    std::vector<std::unique_ptr<Node>> m_nodes;
    // Rank 0's events; m_eventOffset and m_eventLine are where the events
    // told to the sink end, so a follower that goes on from there loses and
    // doubles none.
    std::unique_ptr<RemoteEventFeed> m_feed;
    uint64_t m_eventOffset = 0;
    uint64_t m_eventLine = 1;
    std::string m_eventsProblem; // the last error reading them, said once
    metrics::RunHistory m_history;
    std::function<bool()> m_interrupted; // a stop or detach was asked for
    std::mutex m_sinkMutex; // the preflight's threads report through one sink
    struct Stopping {
        std::optional<StopReason> reason; // why the run ends, once known
        std::chrono::steady_clock::time_point since{}, killAt{}, giveUpAt{}; // since: SIGTERM sent
        bool killed = false;
    } m_stop;
};

// The SSH target a hostfile line names, with the options' key and known hosts.
SshTarget targetFor(const launch::HostSlots& host, const ClusterOptions& options);

} // namespace tb::remote
