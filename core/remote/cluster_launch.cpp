#include "remote/cluster_launch.h"
#include "remote/cluster_node.h"

#include "common/run_secret.h"
#include "launch/text_quote.h"
#include "launch/world_layout.h"
#include "remote/bounded_workers.h"
#include "remote/remote_registry.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <sstream>
#include <system_error>
#include <thread>

namespace tb::remote {

namespace {

using cluster_detail::Clock;
using common::Error;

// Reconnecting to a node that dropped is tried this often, not every poll:
// each try may wait for the SSH timeout.
constexpr auto kReconnectEvery = std::chrono::seconds(5);
// After SIGKILL, how long the nodes get to report their launcher gone.
constexpr double kAfterKillSeconds = 10.0;
// Nodes polled or signalled at once: each holds a thread while it waits.
constexpr size_t kNodeWorkers = 32;

using cluster_detail::firstLine;
using cluster_detail::joinLines;

} // namespace

std::string cluster_detail::joinLines(const std::vector<std::string>& lines)
{
    std::string text;
    for (const std::string& line : lines)
        text += (text.empty() ? "" : "\n  ") + line;
    return text;
}

std::string cluster_detail::firstLine(const std::string& text)
{
    const size_t end = text.find('\n');
    return text.substr(0, end);
}

std::string_view toString(NodeState state)
{
    switch (state) {
    case NodeState::Connecting:
        return "connecting";
    case NodeState::Checked:
        return "checked";
    case NodeState::CheckFailed:
        return "check-failed";
    case NodeState::Starting:
        return "starting";
    case NodeState::Running:
        return "running";
    case NodeState::Unreachable:
        return "unreachable";
    case NodeState::Exited:
        return "exited";
    case NodeState::Vanished:
        return "vanished";
    }
    return "?";
}

std::optional<NodeState> parseNodeState(std::string_view text)
{
    for (const NodeState state :
        {NodeState::Connecting, NodeState::Checked, NodeState::CheckFailed, NodeState::Starting,
            NodeState::Running, NodeState::Unreachable, NodeState::Exited, NodeState::Vanished})
        if (toString(state) == text)
            return state;
    return std::nullopt;
}

SshTarget targetFor(const launch::HostSlots& host, const ClusterOptions& options)
{
    SshTarget target;
    target.user = host.user;
    target.host = host.host;
    target.port = host.port;
    target.identityFile = options.identityFile;
    target.knownHostsFile = options.knownHostsFile;
    target.timeoutSeconds = options.sshTimeoutSeconds;
    return target;
}

ClusterLaunch::ClusterLaunch(ClusterOptions options)
    : m_options(std::move(options))
{
    if (m_options.runId.empty())
        m_options.runId = launch::newRunId();
    if (m_options.masterAddr.empty() && !m_options.hosts.empty())
        m_options.masterAddr = m_options.hosts.front().host;
    for (size_t i = 0; i < m_options.hosts.size(); ++i) {
        auto node = std::make_unique<Node>();
        node->rank = int(i);
        node->host = m_options.hosts[i];
        node->target = targetFor(node->host, m_options);
        m_nodes.push_back(std::move(node));
    }
}

ClusterLaunch::~ClusterLaunch() = default;

std::string ClusterLaunch::launchCommand(const Node& node) const
{
    std::vector<std::string> words = {m_options.remoteCli, "launch", m_options.configPath,
        "--nproc", std::to_string(node.host.slotIndices.size()), "--nnodes",
        std::to_string(m_nodes.size()), "--node-rank", std::to_string(node.rank), "--master-addr",
        m_options.masterAddr, "--master-port", std::to_string(m_options.masterPort), "--run-id",
        m_options.runId, "--grace", std::to_string(m_options.graceSeconds), "--detach"};
    if (node.host.slotsRestricted) {
        std::string devices;
        for (int slot : node.host.slotIndices)
            devices += (devices.empty() ? "" : ",") + std::to_string(slot);
        words.insert(words.end(), {"--devices", devices});
    }
    if (!m_options.trainerArguments.empty()) {
        words.push_back("--");
        words.insert(
            words.end(), m_options.trainerArguments.begin(), m_options.trainerArguments.end());
    }
    std::string command;
    for (const std::string& word : words)
        command += (command.empty() ? "" : " ") + launch::shellQuote(word);
    return command;
}

common::Status ClusterLaunch::startNodes(ClusterSink& sink)
{
    // The ranks' run secret (common/run_secret.h) goes to each node inside
    // the script it runs, never in a command line.
    const common::Result<std::string> secret = common::newRunSecret();
    if (!secret)
        return Error{"cannot make the run secret: " + secret.error().message, {}};
    for (auto& nodePointer : m_nodes) {
        Node& node = *nodePointer;
        sink.nodeState({node.rank, node.host.address(), NodeState::Starting});
        common::Result<CommandResult> started =
            node.session->run(launchCommand(node), 0, {{common::kRunSecretVariable, *secret}});
        common::Result<launch::RegistryEntry> entry = Error{"no answer", {}};
        if (started && started->exitStatus == 0)
            entry = launch::registryEntryFromJson(started->output, node.name());
        if (!entry) {
            const std::string why = !started ? started.error().toString()
                : started->exitStatus != 0   ? firstLine(started->errorOutput)
                                             : entry.error().message;
            signalNodes("KILL", sink);
            return Error{node.name() + ": the launcher did not start: " + why, {}};
        }
        node.entry = std::move(entry).value();
        node.state = NodeState::Running;
        NodeUpdate update{node.rank, node.host.address(), NodeState::Running,
            "launcher pid " + std::to_string(node.entry.pid) + ", run folder " + node.entry.runDir
                + ", log " + node.entry.log};
        update.runFolder = node.entry.runDir;
        update.log = node.entry.log;
        sink.nodeState(update);
    }
    return common::Ok{};
}

void ClusterLaunch::forEachNode(const std::function<void(Node&)>& work, ClusterSink& sink)
{
    forEachBounded(m_nodes.size(), kNodeWorkers, [&](size_t i) { work(*m_nodes[i]); });
    for (auto& node : m_nodes) {
        for (const auto& news : node->news)
            news(sink);
        node->news.clear();
    }
}

bool ClusterLaunch::ensureSession(Node& node, bool now)
{
    if (node.session)
        return true;
    if (node.connecting.valid()) {
        if (node.connecting.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
            return false;
        common::Result<std::unique_ptr<SshSession>> session = node.connecting.get();
        if (session) {
            node.session = std::move(session).value();
            node.note(node.name() + ": reconnected");
            return true;
        }
    }
    if (!now && Clock::now() < node.nextReconnect)
        return false;
    node.nextReconnect = Clock::now() + kReconnectEvery;
    try {
        node.connecting = std::async(std::launch::async, &SshSession::connect, connectTarget(node));
    } catch (const std::system_error&) {
        // No thread to connect on: tried again at the next reconnect.
    }
    return false;
}

// During a stop a connect gets no longer than the stop has left, so none
// outlives the launch's bound (its future's destructor would wait for it).
SshTarget ClusterLaunch::connectTarget(const Node& node) const
{
    SshTarget target = node.target;
    if (m_stop.reason) {
        const double left = std::chrono::duration<double>(m_stop.giveUpAt - Clock::now()).count();
        target.timeoutSeconds = std::min(target.timeoutSeconds, std::max(1.0, left));
    }
    return target;
}

void ClusterLaunch::dropSession(Node& node)
{
    node.session.reset();
    node.nextReconnect = Clock::now() + kReconnectEvery;
}

void ClusterLaunch::pollNode(Node& node)
{
    if (node.ended() || !ensureSession(node, false))
        return;
    sendPendingSignal(node, false);
    if (!node.session)
        return;
    common::Result<std::vector<launch::RegistryEntry>> entries =
        remoteRegistry(*node.session, m_options.remoteCli, m_options.runId);
    if (!entries) {
        dropSession(node);
        // A signal to this process (a stop, a detach) interrupts the wait
        // too; only a link that failed on its own is news.
        if (!m_interrupted || !m_interrupted()) {
            node.state = NodeState::Unreachable;
            node.tell({node.rank, node.host.address(), node.state,
                entries.error().message + "; the run goes on there"});
        }
        return;
    }
    for (launch::RegistryEntry& entry : entries.value()) {
        if (entry.nodeRank != node.rank)
            continue;
        const NodeState before = node.state;
        node.entry = std::move(entry);
        node.state = node.entry.state == "running" ? NodeState::Running
            : node.entry.state == "exited"         ? NodeState::Exited
                                                   : NodeState::Vanished;
        if (node.state != before) {
            const std::string detail = node.state == NodeState::Exited
                ? "exit status " + std::to_string(node.entry.exitCode) + ": " + node.entry.summary
                : node.state == NodeState::Vanished
                ? "its launcher is gone without an exit status (killed?)"
                : "";
            node.tell(node.update(detail));
        }
    }
}

void ClusterLaunch::signalNodes(const std::string& signal, ClusterSink& sink)
{
    for (auto& node : m_nodes) {
        if (!node->ended() && node->entry.pid != 0)
            node->pendingSignal = signal;
    }
    forEachNode([this](Node& node) { sendPendingSignal(node, true); }, sink);
}

void ClusterLaunch::sendPendingSignal(Node& node, bool now)
{
    if (node.pendingSignal.empty() || node.ended())
        return;
    const std::string signal = "SIG" + node.pendingSignal;
    if (!ensureSession(node, now)) {
        if (now)
            node.note(node.name() + ": unreachable; " + signal + " goes once it answers");
        return;
    }
    common::Result<CommandResult> sent = node.cli(m_options.remoteCli,
        {"node-check", "--signal", node.pendingSignal, "--run-id", m_options.runId});
    if (!sent) {
        dropSession(node); // the signal stays pending for the next connect
        node.note(node.name() + ": could not send " + signal + ": " + sent.error().message);
        return;
    }
    node.pendingSignal.clear();
}

bool ClusterLaunch::allEnded() const
{
    for (const auto& node : m_nodes) {
        if (!node->ended())
            return false;
    }
    return true;
}

common::Result<ClusterReport> ClusterLaunch::run(
    ClusterSink& sink, const launch::CancelToken& cancel, const launch::CancelToken& detach)
{
    if (common::Status started = startNodes(sink); !started)
        return started.error();
    return follow(sink, cancel, detach, false);
}

common::Status ClusterLaunch::attach(ClusterSink& sink, uint64_t eventOffset, uint64_t eventLine)
{
    m_eventOffset = eventOffset;
    m_eventLine = eventLine;
    std::vector<std::string> problems(m_nodes.size());
    forEachNode([&](Node& node) { problems[size_t(node.rank)] = attachNode(node); }, sink);
    std::erase(problems, std::string());
    if (!problems.empty())
        return Error{"cannot attach to run " + m_options.runId + ":\n  " + joinLines(problems), {}};
    return common::Ok{};
}

std::string ClusterLaunch::attachNode(Node& node)
{
    common::Result<std::unique_ptr<SshSession>> session = SshSession::connect(node.target);
    if (!session)
        return node.name() + ": " + session.error().toString();
    node.session = std::move(session).value();
    common::Result<std::vector<launch::RegistryEntry>> entries =
        remoteRegistry(*node.session, m_options.remoteCli, m_options.runId);
    if (!entries)
        return node.name() + ": " + entries.error().toString();
    const auto mine = std::find_if(entries->begin(), entries->end(),
        [&](const launch::RegistryEntry& e) { return e.nodeRank == node.rank; });
    if (mine == entries->end())
        return node.name() + ": no node " + std::to_string(node.rank) + " of run " + m_options.runId
            + " in its run registry";
    node.entry = *mine;
    node.state = mine->state == "running" ? NodeState::Running
        : mine->state == "exited"         ? NodeState::Exited
                                          : NodeState::Vanished;
    node.tell(node.update(
        node.state == NodeState::Exited ? "exit status " + std::to_string(mine->exitCode) : ""));
    return {};
}

std::optional<ClusterLaunch::StopReason> ClusterLaunch::reasonToStop(
    const launch::CancelToken& cancel) const
{
    for (const auto& node : m_nodes) {
        if (node->failed())
            return StopReason{ClusterOutcome::NodeFailed,
                node->name() + ": "
                    + (node->state == NodeState::Vanished
                            ? "its launcher was killed (pid " + std::to_string(node->entry.pid)
                                + ")"
                            : "exit status " + std::to_string(node->entry.exitCode) + ": "
                                + node->entry.summary)};
    }
    for (const auto& node : m_nodes) {
        if (node->stopped())
            return StopReason{ClusterOutcome::Stopped, node->name() + " was stopped"};
    }
    if (cancel.isCancelled())
        return StopReason{ClusterOutcome::Stopped, "stop requested"};
    return std::nullopt;
}

void ClusterLaunch::beginStop(StopReason reason, ClusterSink& sink)
{
    m_stop.reason = std::move(reason);
    m_stop.since = Clock::now();
    m_stop.killAt =
        m_stop.since + std::chrono::milliseconds(long((m_options.graceSeconds + 5) * 1000));
    m_stop.giveUpAt = m_stop.killAt + std::chrono::milliseconds(long(kAfterKillSeconds * 1000));
    sink.note(m_stop.reason->message + "; stopping every node");
    signalNodes("TERM", sink);
}

// One round of a stop under way: SIGKILL once the grace is over; true when
// it is over (every node ended, or no news from one for too long).
bool ClusterLaunch::stopOver(ClusterSink& sink)
{
    if (allEnded() || Clock::now() >= m_stop.giveUpAt)
        return true;
    if (!m_stop.killed && Clock::now() >= m_stop.killAt) {
        m_stop.killed = true;
        sink.note("a node did not stop within the grace; SIGKILL");
        signalNodes("KILL", sink);
    }
    return false;
}

common::Result<ClusterReport> ClusterLaunch::follow(ClusterSink& sink,
    const launch::CancelToken& cancel, const launch::CancelToken& detach, bool stopAtOnce)
{
    m_interrupted = [&cancel, &detach] { return cancel.isCancelled() || detach.isCancelled(); };
    m_stop = {};
    if (stopAtOnce)
        beginStop({ClusterOutcome::Stopped, "stop requested"}, sink);
    bool detached = false;
    const auto poll = std::chrono::milliseconds(long(m_options.pollSeconds * 1000));
    for (;;) {
        followEvents(sink);
        forEachNode([this](Node& node) { pollNode(node); }, sink);
        if (m_stop.reason) {
            if (stopOver(sink))
                break;
        } else if (std::optional<StopReason> reason = reasonToStop(cancel)) {
            // Every node already ended this way: nothing left to stop.
            if (allEnded()) {
                m_stop.reason = std::move(reason);
                break;
            }
            beginStop(std::move(*reason), sink);
        } else if (allEnded()) {
            break;
        } else if (detach.isCancelled()) {
            detached = true;
            break;
        }
        std::this_thread::sleep_for(poll);
    }
    if (!detached)
        followEventsToEnd(sink);
    m_feed.reset();
    return report(detached);
}

ClusterReport ClusterLaunch::report(bool detached) const
{
    ClusterReport report;
    report.runId = m_options.runId;
    report.eventOffset = m_eventOffset;
    report.eventLine = m_eventLine;
    if (detached)
        report.outcome = ClusterOutcome::Detached;
    else if (m_stop.reason) {
        report.outcome = m_stop.reason->outcome;
        report.message = m_stop.reason->message;
    }
    const bool stopSent = m_stop.since != Clock::time_point{};
    if (stopSent)
        report.stopSeconds = std::chrono::duration<double>(Clock::now() - m_stop.since).count();
    for (const auto& node : m_nodes) {
        report.nodes.push_back(node->entry);
        if (stopSent && !node->ended())
            report.message += "; " + node->name() + " did not confirm its end ("
                + std::string(toString(node->state)) + ")";
    }
    return report;
}

} // namespace tb::remote
