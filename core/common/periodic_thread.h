#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace tb::common {

// A thread that calls `tick` every `period` until `tick` returns false or
// the object is destroyed. Destruction wakes the wait at once and joins, so
// it takes at most the tick in progress. Qt-free and LibTorch-free, so the
// ThreadSanitizer preset checks the threading that core/dist's heartbeats
// (and anything else periodic) run on.
class PeriodicThread {
public:
    PeriodicThread(std::chrono::milliseconds period, std::function<bool()> tick);
    ~PeriodicThread();
    PeriodicThread(const PeriodicThread&) = delete;
    PeriodicThread& operator=(const PeriodicThread&) = delete;

private:
    void run();

    std::chrono::milliseconds m_period;
    std::function<bool()> m_tick;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stopping = false;
    std::thread m_thread; // last: it starts once the members it reads exist
};

} // namespace tb::common
