#pragma once

// What cluster_launch.cpp and cluster_preflight.cpp share: a node of the
// launch and the text helpers of their messages. Not for other code.
#include "launch/text_quote.h"
#include "remote/cluster_launch.h"

#include <chrono>
#include <csignal>
#include <functional>
#include <future>

namespace tb::remote {

namespace cluster_detail {

using Clock = std::chrono::steady_clock;

// The lines as one message, each after a newline and an indent.
std::string joinLines(const std::vector<std::string>& lines);
std::string firstLine(const std::string& text);

} // namespace cluster_detail

struct ClusterLaunch::Node {
    int rank = 0;
    launch::HostSlots host;
    SshTarget target;
    std::unique_ptr<SshSession> session;
    launch::RegistryEntry entry;
    std::string factsRunDir; // the run config's output.dir as node-check resolved it there
    NodeState state = NodeState::Connecting;
    cluster_detail::Clock::time_point nextReconnect{};
    // A connect on a thread of its own: the supervisor's loop never waits
    // for a node that does not answer.
    std::future<common::Result<std::unique_ptr<SshSession>>> connecting;
    std::string pendingSignal; // "TERM" or "KILL", sent once the node answers
    // What a worker found out about the node, told to the sink by the
    // launch's own thread afterwards, in node order.
    std::vector<std::function<void(ClusterSink&)>> news;

    void tell(NodeUpdate update)
    {
        news.emplace_back(
            [update = std::move(update)](ClusterSink& sink) { sink.nodeState(update); });
    }
    void note(std::string line)
    {
        news.emplace_back([line = std::move(line)](ClusterSink& sink) { sink.note(line); });
    }

    std::string name() const
    {
        return "node " + std::to_string(rank) + " (" + host.address() + ")";
    }
    // Its state as a watcher gets it: the exit code when it exited.
    NodeUpdate update(std::string detail) const
    {
        NodeUpdate out{rank, host.address(), state, std::move(detail)};
        if (state == NodeState::Exited)
            out.exitCode = entry.exitCode;
        return out;
    }
    bool ended() const { return state == NodeState::Exited || state == NodeState::Vanished; }
    // Ended on a stop request (SIGINT or SIGTERM forwarded to its ranks), from
    // this launch or another (launch --stop, monitor --stop).
    bool stopped() const
    {
        return state == NodeState::Exited
            && (entry.exitCode == 128 + SIGTERM || entry.exitCode == 128 + SIGINT);
    }
    bool failed() const
    {
        return state == NodeState::Vanished
            || (state == NodeState::Exited && entry.exitCode != 0 && !stopped());
    }

    // `tunebench-cli ARGS...` on the node, the words quoted for its shell.
    common::Result<CommandResult> cli(
        const std::string& remoteCli, const std::vector<std::string>& args)
    {
        std::string command = launch::shellQuote(remoteCli);
        for (const std::string& arg : args)
            command += " " + launch::shellQuote(arg);
        common::Result<CommandResult> result = session->run(command);
        if (result && result->exitStatus == 127)
            return common::Error{name() + ": " + remoteCli + " is not there (the shell said: "
                    + cluster_detail::firstLine(result->errorOutput) + ")",
                "install the same tunebench build on every node, at the same path, or give "
                "--remote-cli"};
        return result;
    }
};

} // namespace tb::remote
