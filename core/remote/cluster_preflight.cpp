// The preflight of a multi-node launch: every node checked at once, --sync,
// and the master port (docs/LAUNCH.md).
#include "common/text.h"
#include "launch/address_scope.h"
#include "launch/node_facts.h"
#include "launch/port_check.h"
#include "remote/bounded_workers.h"
#include "remote/cluster_launch.h"
#include "remote/cluster_node.h"
#include "remote/shared_run_folder.h"

namespace tb::remote {

namespace {

using cluster_detail::Clock;
using cluster_detail::firstLine;
using cluster_detail::joinLines;
using common::Error;

// Nodes checked at once: each holds a thread, an SSH session (with its
// watchdog thread) and a socket while it is checked.
constexpr size_t kPreflightWorkers = 32;

} // namespace

common::Status ClusterLaunch::preflight(ClusterSink& sink)
{
    const launch::NodeFacts here = launch::collectNodeFacts(m_options.configPath);
    if (!here.configError.empty())
        return Error{"the run config does not load here: " + here.configError, {}};
    std::vector<std::vector<std::string>> problems(m_nodes.size());
    forEachBounded(m_nodes.size(), kPreflightWorkers, [this, &here, &problems, &sink](size_t i) {
        problems[i] = checkNode(*m_nodes[i], here, sink);
    });
    std::vector<std::string> all;
    for (size_t i = 0; i < m_nodes.size(); ++i) {
        const bool ok = problems[i].empty();
        NodeUpdate update{int(i), m_nodes[i]->host.address(),
            ok ? NodeState::Checked : NodeState::CheckFailed,
            ok ? "preflight passed" : problems[i].front()};
        update.problems = problems[i];
        sink.nodeState(update);
        all.insert(all.end(), problems[i].begin(), problems[i].end());
    }
    if (all.empty())
        all = checkSharedRunFolder();
    if (all.empty()) {
        if (common::Status port = checkMasterPort(sink); !port)
            all.push_back(port.error().message);
    }
    if (!all.empty()) {
        sink.preflightFailed(all);
        return Error{"preflight found " + std::to_string(all.size())
                + " problem(s); nothing was started:\n  " + joinLines(all),
            {}};
    }
    return common::Ok{};
}

common::Result<launch::NodeFacts> ClusterLaunch::nodeFacts(Node& node)
{
    common::Result<CommandResult> answer =
        node.cli(m_options.remoteCli, {"node-check", m_options.configPath});
    if (!answer)
        return answer.error();
    if (answer->exitStatus != 0)
        return Error{node.name() + ": node-check failed: " + firstLine(answer->errorOutput), {}};
    return launch::nodeFactsFromJson(answer->output, node.name());
}

std::vector<std::string> ClusterLaunch::checkNode(
    Node& node, const launch::NodeFacts& here, ClusterSink& sink)
{
    common::Result<std::unique_ptr<SshSession>> session = SshSession::connect(node.target);
    if (!session)
        return {node.name() + ": " + session.error().toString()};
    node.session = std::move(session).value();
    common::Result<launch::NodeFacts> facts = nodeFacts(node);
    if (facts && m_options.sync) {
        if (common::Status synced = syncInputs(node, here, sink); !synced)
            return {node.name() + ": --sync: " + synced.error().toString()};
        facts = nodeFacts(node);
    }
    if (!facts)
        return {facts.error().toString()};
    node.factsRunDir = facts->runDir;
    return launch::compareNodeFacts(here, *facts, node.name(), int(node.host.slotIndices.size()));
}

common::Status ClusterLaunch::syncInputs(
    Node& node, const launch::NodeFacts& here, ClusterSink& sink)
{
    std::vector<std::string> files;
    for (const launch::FileFact& file : here.inputs)
        files.push_back(file.path);
    auto lastReport = Clock::now() - std::chrono::seconds(1);
    const ProgressCallback progress = [&](const TransferProgress& p) {
        if (Clock::now() - lastReport < std::chrono::milliseconds(500) && p.bytesDone < p.bytes)
            return;
        lastReport = Clock::now();
        const std::lock_guard lock(m_sinkMutex);
        sink.transferProgress(node.rank, node.host.address(), p);
    };
    common::Result<TransferSummary> summary = uploadFiles(*node.session, files, progress);
    if (!summary)
        return summary.error();
    const std::lock_guard lock(m_sinkMutex);
    sink.note(node.name() + ": synced " + std::to_string(summary->copied) + " file(s) ("
        + std::to_string(summary->resumed) + " resumed, " + std::to_string(summary->bytesSent)
        + " bytes sent), " + std::to_string(summary->skipped) + " already equal");
    return common::Ok{};
}

std::vector<std::string> ClusterLaunch::checkSharedRunFolder()
{
    if (m_nodes.size() < 2)
        return {};
    Node& master = *m_nodes.front();
    const std::string runDir =
        launch::trainerOutputDir(m_options.trainerArguments, master.factsRunDir);
    const std::string shown = common::escapeControl(runDir);
    const common::Result<std::string> marker =
        writeSharedMarker(*master.session, runDir, launch::newPortCheckNonce());
    if (!marker)
        return {master.name() + ": " + marker.error().toString()};
    std::vector<std::string> problems(m_nodes.size());
    forEachBounded(m_nodes.size() - 1, kPreflightWorkers, [&](size_t i) {
        Node& node = *m_nodes[i + 1];
        const common::Result<bool> seen = remotePathExists(*node.session, *marker);
        if (!seen)
            problems[i] = node.name() + ": cannot tell whether run folder " + shown
                + " is shared with node 0: " + seen.error().message;
        else if (!*seen)
            problems[i] = node.name() + ": run folder " + shown
                + " is not shared with node 0 (node 0 wrote " + common::escapeControl(*marker)
                + ", which this node does not see); every rank writes its part "
                + "of a checkpoint there and rank 0 gathers them: put it on a file system every "
                  "node mounts at "
                + "the same path (NFS, Lustre, ...)";
    });
    if (const common::Status removed = removeRemoteFile(*master.session, *marker); !removed)
        problems.back() = master.name() + ": " + removed.error().message;
    std::erase(problems, std::string());
    return problems;
}

common::Status ClusterLaunch::checkMasterPort(ClusterSink& sink)
{
    Node& master = *m_nodes.front();
    if (m_options.masterPort == 0) {
        common::Result<CommandResult> free =
            master.cli(m_options.remoteCli, {"node-check", "--free-port"});
        if (!free || free->exitStatus != 0)
            return Error{master.name() + ": no free port for the master: "
                    + (free ? firstLine(free->errorOutput) : free.error().message),
                {}};
        m_options.masterPort = std::atoi(free->output.c_str());
    }
    const std::string port = std::to_string(m_options.masterPort);
    const std::string seconds = std::to_string(m_options.portCheckSeconds);
    const std::string nonce = launch::newPortCheckNonce(); // a scanner's bare connection is no node
    std::vector<std::string> problems(m_nodes.size());
    // Node 0's listen is taken first, so it waits while the others connect.
    forEachBounded(m_nodes.size(), kPreflightWorkers, [&](size_t i) {
        Node& node = *m_nodes[i];
        if (i == 0) {
            auto listen = master.cli(m_options.remoteCli,
                {"node-check", "--listen", port, "--address", m_options.masterAddr, "--peers",
                    std::to_string(m_nodes.size() - 1), "--nonce", nonce, "--timeout", seconds});
            if (!listen || listen->exitStatus != 0)
                problems[0] = master.name() + ": master port " + port + ": "
                    + (listen ? firstLine(listen->errorOutput) : listen.error().message);
            return;
        }
        auto connect = node.cli(m_options.remoteCli,
            {"node-check", "--connect", m_options.masterAddr + ":" + port, "--nonce", nonce,
                "--node-rank", std::to_string(i), "--timeout", seconds});
        if (!connect || connect->exitStatus != 0)
            problems[i] = node.name() + ": cannot reach the master port: "
                + (connect ? firstLine(connect->errorOutput) : connect.error().message);
    });
    std::vector<std::string> found;
    for (const std::string& problem : problems) {
        if (!problem.empty())
            found.push_back(problem);
    }
    if (!found.empty())
        return Error{joinLines(found), {}};
    sink.note("master " + m_options.masterAddr + ":" + port
        + " free on node 0 and reachable from every node");
    for (const std::string& address : launch::resolvedAddresses(m_options.masterAddr)) {
        if (launch::isPublicAddress(address)) {
            sink.note("warning: the master address " + m_options.masterAddr + " (" + address
                + ") is public: the store (no authentication beyond the run's secret) and "
                  "Gloo's traffic (gradients, not encrypted) go over the internet unless a "
                  "firewall keeps port "
                + port
                + " to the cluster; give --master-addr node 0's private address "
                  "(docs/LAUNCH.md, \"What listens\")");
            break;
        }
    }
    return common::Ok{};
}

} // namespace tb::remote
