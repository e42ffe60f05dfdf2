#include "dist/arrival.h"

#include "dist/join_proof.h"

#include <cstdio>
#include <thread>
#include <vector>

namespace tb::dist {
namespace {

const std::string kArrivals = "rendezvous/arrivals";
const std::string kAbandoned = "rendezvous/abandoned";
constexpr auto kPollInterval = std::chrono::milliseconds(50);

std::string arrivedKey(int rank)
{
    return "rendezvous/arrived/" + std::to_string(rank);
}

std::vector<int> missingRanks(c10d::Store& store, int worldSize)
{
    std::vector<int> missing;
    for (int rank = 0; rank < worldSize; ++rank) {
        if (!store.check({arrivedKey(rank)}))
            missing.push_back(rank);
    }
    return missing;
}

// "rank 2 of 3 never arrived", "ranks 2, 3 of 4 never arrived"
std::string describeMissing(const std::vector<int>& missing, int worldSize)
{
    std::string text = missing.size() == 1 ? "rank " : "ranks ";
    for (std::size_t index = 0; index < missing.size(); ++index)
        text += (index > 0 ? ", " : "") + std::to_string(missing[index]);
    return text + " of " + std::to_string(worldSize) + " never arrived";
}

std::string asText(const std::vector<std::uint8_t>& bytes)
{
    return std::string(bytes.begin(), bytes.end());
}

} // namespace

std::string formatSeconds(double seconds)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g s", seconds);
    return text;
}

std::string rendezvousPlace(const RankEnvironment& environment)
{
    return "rendezvous at " + environment.masterAddr + ":" + std::to_string(environment.masterPort);
}

common::Status awaitAllRanks(c10d::Store& store, const RankEnvironment& environment,
    double timeoutSeconds, std::chrono::steady_clock::time_point deadline)
{
    const int worldSize = environment.worldSize;
    const std::string timedOut =
        rendezvousPlace(environment) + " timed out after " + formatSeconds(timeoutSeconds) + ": ";
    // What we last knew, for when rank 0 (and its store) goes away under us.
    std::vector<int> lastMissing;
    try {
        store.set(arrivedKey(environment.rank), std::vector<std::uint8_t>{1});
        store.add(kArrivals, 1);
        for (int poll = 0;; ++poll) {
            if (store.add(kArrivals, 0) >= worldSize)
                return common::Ok{};
            if (store.check({kAbandoned})) {
                // Only rank 0's verdict ends the wait, not one a stranger wrote.
                const std::string verdict = verifiedText(
                    environment.runSecret, environment.runId, asText(store.get(kAbandoned)));
                if (!verdict.empty())
                    return common::Error{verdict, {}};
            }
            if (poll % 10 == 0)
                lastMissing = missingRanks(store, worldSize);
            if (std::chrono::steady_clock::now() >= deadline)
                break;
            std::this_thread::sleep_for(kPollInterval);
        }
        const std::string message =
            timedOut + describeMissing(missingRanks(store, worldSize), worldSize);
        if (environment.rank == 0) {
            // Leave the verdict, and keep the store up long enough for the
            // ranks that did arrive to read it.
            const std::string text = signText(environment.runSecret, environment.runId, message);
            store.set(kAbandoned, std::vector<std::uint8_t>(text.begin(), text.end()));
            std::this_thread::sleep_for(10 * kPollInterval);
        }
        return common::Error{message, {}};
    } catch (const std::exception& error) {
        std::string message = rendezvousPlace(environment)
            + ": the store of rank 0 went away before every rank arrived ("
            + describeTorchError(error) + ")";
        if (!lastMissing.empty())
            message += "; " + describeMissing(lastMissing, worldSize);
        return common::Error{message, {}};
    }
}

} // namespace tb::dist
