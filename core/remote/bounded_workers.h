#pragma once

#include <cstddef>
#include <functional>

namespace tb::remote {

// Runs work(0) .. work(count - 1) on at most `maxWorkers` threads at once
// and returns when every call has returned. A hostfile of thousands of
// nodes then needs as many threads, SSH sessions and sockets as the pool,
// not one each. A thread that cannot be started leaves its share to those
// that did (to the calling thread when none did), and every started thread
// is joined however this returns, so a failed start never ends the program
// in std::terminate. `work` must not throw.
void forEachBounded(
    std::size_t count, std::size_t maxWorkers, const std::function<void(std::size_t)>& work);

} // namespace tb::remote
