#include "remote/bounded_workers.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace tb::remote {

namespace {

struct JoinAll {
    std::vector<std::thread>& threads;
    ~JoinAll()
    {
        for (std::thread& thread : threads) {
            if (thread.joinable())
                thread.join();
        }
    }
};

} // namespace

void forEachBounded(
    std::size_t count, std::size_t maxWorkers, const std::function<void(std::size_t)>& work)
{
    std::atomic<std::size_t> next{0};
    const auto drain = [&] {
        for (std::size_t index = next++; index < count; index = next++)
            work(index);
    };
    std::vector<std::thread> workers;
    const JoinAll joinAll{workers};
    try {
        const std::size_t wanted = std::min(count, std::max<std::size_t>(maxWorkers, 1));
        workers.reserve(wanted);
        while (workers.size() < wanted)
            workers.emplace_back(drain);
    } catch (const std::exception&) {
        // Out of threads or memory: fewer workers share the nodes.
    }
    if (workers.empty())
        drain();
}

} // namespace tb::remote
