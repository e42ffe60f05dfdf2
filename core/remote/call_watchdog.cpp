#include "remote/call_watchdog.h"

#include <sys/socket.h>

namespace tb::remote {

CallWatchdog::CallWatchdog()
    : m_thread([this] { watch(); })
{
}

CallWatchdog::~CallWatchdog()
{
    {
        const std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_changed.notify_all();
    m_thread.join();
}

void CallWatchdog::arm(int socket, std::chrono::milliseconds limit)
{
    {
        const std::lock_guard lock(m_mutex);
        m_socket = socket;
        if (m_interrupted) {
            ::shutdown(m_socket, SHUT_RDWR);
            return;
        }
        m_deadline = Clock::now() + limit;
    }
    m_changed.notify_all();
}

void CallWatchdog::disarm()
{
    {
        const std::lock_guard lock(m_mutex);
        m_deadline.reset();
    }
    m_changed.notify_all();
}

void CallWatchdog::interrupt()
{
    const std::lock_guard lock(m_mutex);
    m_interrupted = true;
    m_fired = true;
    m_deadline.reset();
    if (m_socket >= 0)
        ::shutdown(m_socket, SHUT_RDWR);
}

bool CallWatchdog::interrupted() const
{
    const std::lock_guard lock(m_mutex);
    return m_interrupted;
}

bool CallWatchdog::fired() const
{
    const std::lock_guard lock(m_mutex);
    return m_fired;
}

void CallWatchdog::watch()
{
    std::unique_lock lock(m_mutex);
    while (!m_stopping) {
        if (!m_deadline) {
            m_changed.wait(lock);
            continue;
        }
        const Clock::time_point deadline = *m_deadline;
        if (m_changed.wait_until(lock, deadline) == std::cv_status::timeout
            && m_deadline == deadline) {
            // The socket stays open (libssh owns and closes it); shut down,
            // every read and write on it fails from now on.
            ::shutdown(m_socket, SHUT_RDWR);
            m_fired = true;
            m_deadline.reset();
        }
    }
}

} // namespace tb::remote
