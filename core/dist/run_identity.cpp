#include "dist/run_identity.h"

#include "dist/arrival.h"

#include <thread>

namespace tb::dist {
namespace {

// Outside every job's prefix, so every rank that reaches the store reads it.
const std::string kRunIdKey = "tunebench/run_id";
constexpr auto kRunIdPoll = std::chrono::milliseconds(50);

} // namespace

std::string jobKeyPrefix(const RankEnvironment& environment)
{
    return "run/" + environment.runId; // PrefixStore adds the '/'
}

void announceRunId(c10d::Store& store, const RankEnvironment& environment)
{
    store.set(
        kRunIdKey, std::vector<std::uint8_t>(environment.runId.begin(), environment.runId.end()));
}

common::Status checkRunId(c10d::Store& store, const RankEnvironment& environment,
    std::chrono::steady_clock::time_point deadline)
{
    try {
        while (!store.check({kRunIdKey})) {
            if (std::chrono::steady_clock::now() >= deadline)
                return common::Ok{};
            std::this_thread::sleep_for(kRunIdPoll);
        }
        const std::vector<std::uint8_t> bytes = store.get(kRunIdKey);
        const std::string served(bytes.begin(), bytes.end());
        if (served == environment.runId)
            return common::Ok{};
        return common::Error{rendezvousPlace(environment) + ": the store there serves job '"
                + served + "', this rank belongs to job '" + environment.runId
                + "' (TORCHELASTIC_RUN_ID): two jobs were given the same MASTER_PORT",
            "give each job its own --master-port; this job's rank 0 could not serve it"};
    } catch (const std::exception& error) {
        return common::Error{rendezvousPlace(environment)
                + ": the store of rank 0 went away before it said which job it serves ("
                + describeTorchError(error) + ")",
            {}};
    }
}

} // namespace tb::dist
