#include "common/periodic_thread.h"

namespace tb::common {

PeriodicThread::PeriodicThread(std::chrono::milliseconds period, std::function<bool()> tick)
    : m_period(period)
    , m_tick(std::move(tick))
    , m_thread([this] { run(); })
{
}

PeriodicThread::~PeriodicThread()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    m_thread.join();
}

void PeriodicThread::run()
{
    std::unique_lock lock(m_mutex);
    while (!m_wake.wait_for(lock, m_period, [this] { return m_stopping; })) {
        // The tick runs unlocked: a slow one (a store call that waits for its
        // timeout) never holds up the destructor's request to stop.
        lock.unlock();
        const bool again = m_tick();
        lock.lock();
        if (!again)
            return;
    }
}

} // namespace tb::common
