#pragma once

#include "metrics/event.h"
#include "remote/ssh_target.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tb::remote {

// A run's events followed over SFTP on a connection and a thread of their
// own: a hung SFTP server or file system on the host delays the events,
// never whoever supervises the run (its polls, its stop signals, Ctrl-C).
class RemoteEventFeed {
public:
    // What one read brought: its events and where the file was read to after
    // them, or why it could not be read (tried again each poll).
    struct Batch {
        std::vector<metrics::Event> events;
        uint64_t offset = 0;
        uint64_t nextLine = 1;
        std::string problem;
    };

    // Reads `path` on `target` from `offset` (whose line is `nextLine`),
    // every `poll` once it has read all there is.
    RemoteEventFeed(SshTarget target, std::string path, uint64_t offset, uint64_t nextLine,
        std::chrono::milliseconds poll);
    // Interrupts a call under way (a connect too) and waits for the thread,
    // which ends at once; only a host name's DNS lookup is waited out.
    ~RemoteEventFeed();
    RemoteEventFeed(const RemoteEventFeed&) = delete;
    RemoteEventFeed& operator=(const RemoteEventFeed&) = delete;

    // The batches read since the last take, oldest first. Never waits.
    std::vector<Batch> take();
    // The batches up to the end of the file as it is now (a run's last
    // lines, once it ended): waits at most `bound` for reads that begin
    // after this call to reach the end; `complete` says whether they did.
    std::vector<Batch> takeToEnd(std::chrono::milliseconds bound, bool& complete);

    struct State;

private:
    std::shared_ptr<State> m_state;
    std::thread m_thread;
};

} // namespace tb::remote
