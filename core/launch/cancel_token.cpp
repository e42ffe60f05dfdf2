#include "launch/cancel_token.h"

#include <csignal>

namespace tb::launch {

void CancelToken::cancel(int signal) noexcept
{
    int none = 0;
    // The first request names the reason; later ones only count.
    m_firstSignal.compare_exchange_strong(
        none, signal > 0 ? signal : SIGTERM, std::memory_order_acq_rel);
    m_requests.fetch_add(1, std::memory_order_acq_rel);
}

int CancelToken::signal() const noexcept
{
    const int value = m_firstSignal.load(std::memory_order_acquire);
    return value > 0 ? value : SIGTERM;
}

} // namespace tb::launch
