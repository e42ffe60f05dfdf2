#pragma once

#include <atomic>

namespace tb::launch {

// Asks a long operation (a launch, an SSH transfer) to stop. A request is a
// few lock-free atomic operations, so a signal handler may make it; the
// operation polls isCancelled() and decides how to stop (the launcher
// forwards signal() to every rank and escalates after its grace period, or at
// once on a second request: a second Ctrl-C means "now").
class CancelToken {
public:
    // 0 asks for the default graceful stop (SIGTERM).
    void cancel(int signal = 0) noexcept;

    bool isCancelled() const noexcept { return requestCount() > 0; }
    int requestCount() const noexcept { return m_requests.load(std::memory_order_acquire); }
    // The signal of the first request (SIGINT, SIGTERM), SIGTERM when it gave none.
    int signal() const noexcept;

private:
    std::atomic<int> m_firstSignal{0};
    std::atomic<int> m_requests{0};
    static_assert(std::atomic<int>::is_always_lock_free, "cancel() must be async-signal-safe");
};

} // namespace tb::launch
