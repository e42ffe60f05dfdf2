#include "remote/cluster_launch.h"
#include "remote/cluster_node.h"

#include "common/text.h"

#include <chrono>

// Rank 0's events during a launch across machines: read by a
// RemoteEventFeed, told to the sink by the launch's own thread.
namespace tb::remote {

namespace {

// How long the end of a launch waits for rank 0's last events.
constexpr auto kLastEventsBound = std::chrono::seconds(5);

} // namespace

void ClusterLaunch::followEvents(ClusterSink& sink)
{
    if (!m_feed)
        startFeed();
    if (m_feed)
        deliverEvents(m_feed->take(), sink);
}

// Node 0's events come over a connection of their own (RemoteEventFeed):
// a hung SFTP server there delays them, not the nodes' polls and signals.
void ClusterLaunch::startFeed()
{
    const Node& master = *m_nodes.front();
    if (master.entry.runDir.empty())
        return;
    m_feed = std::make_unique<RemoteEventFeed>(master.target, master.entry.runDir + "/events.jsonl",
        m_eventOffset, m_eventLine, std::chrono::milliseconds(long(m_options.pollSeconds * 1000)));
}

void ClusterLaunch::deliverEvents(std::vector<RemoteEventFeed::Batch> batches, ClusterSink& sink)
{
    for (RemoteEventFeed::Batch& batch : batches) {
        if (!batch.problem.empty()) {
            eventsUnreadable(batch.problem, sink);
            continue;
        }
        m_eventsProblem.clear();
        for (const metrics::Event& event : batch.events) {
            m_history.apply(event);
            sink.runEvent(event, m_history);
        }
        m_eventOffset = batch.offset;
        m_eventLine = batch.nextLine;
    }
}

// The run's last lines once every node ended; bounded, so a hung SFTP
// server on node 0 costs the end of the launch a few seconds at most.
void ClusterLaunch::followEventsToEnd(ClusterSink& sink)
{
    if (!m_feed)
        startFeed();
    if (!m_feed)
        return;
    bool complete = false;
    deliverEvents(m_feed->takeToEnd(kLastEventsBound, complete), sink);
    if (!complete) {
        sink.note("rank 0's last events were not read within "
            + std::to_string(
                std::chrono::duration_cast<std::chrono::seconds>(kLastEventsBound).count())
            + " s; they are in " + m_nodes.front()->entry.runDir + "/events.jsonl from byte "
            + std::to_string(m_eventOffset));
    }
}

// Said once while it lasts; the feed tries again each poll, from the same
// offset, so the run's events go on from there once they can be read.
void ClusterLaunch::eventsUnreadable(const std::string& problem, ClusterSink& sink)
{
    if (problem == m_eventsProblem)
        return;
    m_eventsProblem = problem;
    sink.note("cannot read rank 0's events: " + common::escapeControl(problem)
        + " (trying again at byte " + std::to_string(m_eventOffset) + " each poll)");
}

} // namespace tb::remote
