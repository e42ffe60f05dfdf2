#include "remote/remote_event_feed.h"

#include "metrics/event_file_reader.h"
#include "remote/sftp_event_source.h"
#include "remote/ssh_session.h"

#include <condition_variable>
#include <deque>
#include <iterator>
#include <mutex>
#include <system_error>
#include <thread>

namespace tb::remote {

namespace {

// A connection that failed is made again this often, not every poll: each
// try may wait for the SSH timeout.
constexpr auto kReconnectEvery = std::chrono::seconds(5);
// Batches (EventFileReader::kBytesPerBatch each at most) read ahead of the
// consumer: a backlog waits in the file, not in this process's memory.
constexpr size_t kMaxQueuedBatches = 4;

} // namespace

// What the feed and its thread share, under the mutex.
struct RemoteEventFeed::State {
    SshTarget target;
    std::string path;
    std::chrono::milliseconds poll{};

    std::mutex mutex;
    std::condition_variable changed;
    std::deque<Batch> batches;
    // The thread's connection: replaced and destroyed only under the mutex,
    // so interrupt() from another thread never meets a destroyed one.
    std::unique_ptr<SshSession> session;
    bool stopping = false;
    bool readWanted = false;
    bool ended = false; // the thread does nothing more with SSH or the state
    uint64_t readsStarted = 0;
    uint64_t lastReadToEnd = 0; // the number of the last read that found the file's end

    // Waits `time` or until a stop or a wanted read; false when stopping.
    bool rest(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds time)
    {
        changed.wait_for(lock, time, [this] { return stopping || readWanted; });
        readWanted = false;
        return !stopping;
    }
};

namespace {

using State = RemoteEventFeed::State;
using Batch = RemoteEventFeed::Batch;

class FeedThread {
public:
    FeedThread(std::shared_ptr<State> state, uint64_t offset, uint64_t nextLine)
        : m_state(std::move(state))
        , m_offset(offset)
        , m_nextLine(nextLine)
    {
    }

    void operator()()
    {
        while (round()) { }
        std::unique_ptr<SshSession> session;
        {
            const std::lock_guard lock(m_state->mutex);
            session = std::move(m_state->session);
        }
        // Stopping: nothing more is said to the host, so closing the file
        // and the connection cannot wait on one that hangs.
        if (session)
            session->interrupt();
        m_reader.reset(); // it reads through the session
        // Gone before `ended`: the process may exit once the feed is
        // destroyed, and OpenSSL's cleanup at exit must not meet a thread
        // still tearing a connection down.
        session.reset();
        const std::lock_guard lock(m_state->mutex);
        m_state->ended = true;
        m_state->changed.notify_all();
    }

private:
    // One read (after a connect where needed); false once the feed stops.
    bool round()
    {
        if (!connected())
            return false;
        if (!m_session)
            return rest(kReconnectEvery);
        if (!m_reader) {
            m_reader = std::make_unique<metrics::EventFileReader>(
                sftpEventSource(*m_session, m_state->path), m_offset, m_nextLine);
        }
        uint64_t number = 0;
        {
            const std::lock_guard lock(m_state->mutex);
            number = ++m_state->readsStarted;
        }
        Batch batch = read();
        const bool more = batch.problem.empty() && m_reader->moreAvailable();
        if (!deliver(std::move(batch), more ? 0 : number))
            return false;
        return more || rest(m_state->poll);
    }

    // A connection, made again where the last one failed; false once
    // stopping. The session is in the state before it connects, so the
    // feed's destructor interrupts a connect under way too.
    bool connected()
    {
        if (m_session)
            return true;
        common::Result<std::unique_ptr<SshSession>> prepared = SshSession::prepare(m_state->target);
        if (!prepared)
            return deliver(Batch{{}, m_offset, m_nextLine, prepared.error().toString()}, 0);
        {
            const std::lock_guard lock(m_state->mutex);
            if (m_state->stopping)
                return false;
            m_state->session = std::move(prepared).value();
            m_session = m_state->session.get();
        }
        if (common::Status opened = m_session->open(); !opened) {
            dropSession();
            return deliver(Batch{{}, m_offset, m_nextLine, opened.error().toString()}, 0);
        }
        return true;
    }

    Batch read()
    {
        common::Result<std::vector<metrics::StreamItem>> items = m_reader->poll();
        Batch batch;
        if (!items) {
            // A new connection next round: this one may be gone or hung.
            batch.problem = items.error().toString();
            m_reader.reset();
            dropSession();
        } else {
            for (const metrics::StreamItem& item : *items) {
                if (item.event)
                    batch.events.push_back(*item.event);
            }
            m_offset = m_reader->offset();
            m_nextLine = m_reader->nextLineNumber();
        }
        batch.offset = m_offset;
        batch.nextLine = m_nextLine;
        return batch;
    }

    void dropSession()
    {
        std::unique_ptr<SshSession> session;
        const std::lock_guard lock(m_state->mutex);
        session = std::move(m_state->session);
        m_session = nullptr;
    }

    // Queues what a read brought (a problem once while it lasts, nothing for
    // a read that found nothing new), and `toEnd`, the read's number when it
    // reached the file's end; false once stopping.
    bool deliver(Batch batch, uint64_t toEnd)
    {
        std::unique_lock lock(m_state->mutex);
        if (toEnd)
            m_state->lastReadToEnd = toEnd;
        m_state->changed.notify_all();
        if (!batch.problem.empty()) {
            if (batch.problem == m_lastProblem)
                return !m_state->stopping;
            m_lastProblem = batch.problem;
        } else {
            m_lastProblem.clear();
            if (batch.events.empty())
                return !m_state->stopping;
        }
        m_state->changed.wait(lock,
            [this] { return m_state->stopping || m_state->batches.size() < kMaxQueuedBatches; });
        m_state->batches.push_back(std::move(batch));
        return !m_state->stopping;
    }

    bool rest(std::chrono::milliseconds time)
    {
        std::unique_lock lock(m_state->mutex);
        return m_state->rest(lock, time);
    }

    std::shared_ptr<State> m_state;
    SshSession* m_session = nullptr; // m_state->session, while it lasts
    std::unique_ptr<metrics::EventFileReader> m_reader;
    uint64_t m_offset;
    uint64_t m_nextLine;
    std::string m_lastProblem;
};

} // namespace

RemoteEventFeed::RemoteEventFeed(SshTarget target, std::string path, uint64_t offset,
    uint64_t nextLine, std::chrono::milliseconds poll)
    : m_state(std::make_shared<State>())
{
    m_state->target = std::move(target);
    m_state->path = std::move(path);
    m_state->poll = poll;
    m_thread = std::thread(FeedThread(m_state, offset, nextLine));
}

RemoteEventFeed::~RemoteEventFeed()
{
    std::unique_lock lock(m_state->mutex);
    m_state->stopping = true;
    if (m_state->session)
        m_state->session->interrupt();
    m_state->changed.notify_all();
    lock.unlock();
    m_thread.join();
}

std::vector<RemoteEventFeed::Batch> RemoteEventFeed::take()
{
    const std::lock_guard lock(m_state->mutex);
    std::vector<Batch> out(std::make_move_iterator(m_state->batches.begin()),
        std::make_move_iterator(m_state->batches.end()));
    m_state->batches.clear();
    m_state->changed.notify_all();
    return out;
}

std::vector<RemoteEventFeed::Batch> RemoteEventFeed::takeToEnd(
    std::chrono::milliseconds bound, bool& complete)
{
    const auto deadline = std::chrono::steady_clock::now() + bound;
    std::unique_lock lock(m_state->mutex);
    const uint64_t before = m_state->readsStarted; // reads numbered above began after this call
    m_state->readWanted = true;
    m_state->changed.notify_all();
    std::vector<Batch> out;
    for (;;) {
        // Taken as they come: the thread waits for room in a full queue.
        std::move(m_state->batches.begin(), m_state->batches.end(), std::back_inserter(out));
        m_state->batches.clear();
        m_state->changed.notify_all();
        complete = m_state->lastReadToEnd > before;
        if (complete || m_state->ended)
            return out;
        const bool news = m_state->changed.wait_until(lock, deadline, [&] {
            return !m_state->batches.empty() || m_state->lastReadToEnd > before || m_state->ended;
        });
        if (!news) {
            complete = false;
            return out;
        }
    }
}

} // namespace tb::remote
