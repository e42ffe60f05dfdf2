#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

// Ends a blocking network call that stopped getting answers. libssh 0.10's
// blocking SFTP calls wait for ever on a peer that went quiet (its session
// timeout makes a read return nothing, and the SFTP layer reads again), so
// when an armed deadline passes the watchdog shuts the connection's socket
// down: the waiting call then fails at once, and the connection is gone.
namespace tb::remote {

class CallWatchdog {
public:
    CallWatchdog();
    ~CallWatchdog();
    CallWatchdog(const CallWatchdog&) = delete;
    CallWatchdog& operator=(const CallWatchdog&) = delete;

    // Starts, or starts again, the count of `limit` for `socket`.
    void arm(int socket, std::chrono::milliseconds limit);
    void disarm();
    // Shuts the socket down now, from any thread: a call under way fails at
    // once and so does every later one (a stop that must not wait for a
    // hung peer).
    void interrupt();
    // Whether a deadline passed, or interrupt() came, and the socket was shut down.
    bool fired() const;
    bool interrupted() const;

private:
    using Clock = std::chrono::steady_clock;
    void watch();

    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    int m_socket = -1;
    std::optional<Clock::time_point> m_deadline;
    bool m_fired = false;
    bool m_interrupted = false;
    bool m_stopping = false;
    std::thread m_thread;
};

} // namespace tb::remote
