#include "dist/liveness.h"

#include "common/units.h"
#include "dist/join_proof.h"

#include <algorithm>
#include <thread>

namespace tb::dist {
namespace {

std::string heartbeatKey(int rank)
{
    return "liveness/heartbeat/" + std::to_string(rank);
}

std::string failedKey(int rank)
{
    return "liveness/failed/" + std::to_string(rank);
}

const std::string kVerdictKey = "liveness/verdict";

// "rank 1", "rank 1 and rank 3", "rank 1, rank 2 and rank 3": every rank
// named in full so a reader (or a test) finds "rank 3" as written.
std::string listRanks(const std::vector<int>& ranks)
{
    std::string text;
    for (std::size_t index = 0; index < ranks.size(); ++index) {
        if (index > 0)
            text += index + 1 == ranks.size() ? " and " : ", ";
        text += "rank " + std::to_string(ranks[index]);
    }
    return text;
}

} // namespace

Liveness::Liveness(Options options, StoreHandle store)
    : m_options(std::move(options))
    , m_store(std::move(store))
{
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = static_cast<std::uint16_t>(m_options.port);
    storeOptions.isServer = false;
    storeOptions.waitWorkers = false;
    // A short timeout, so stopping never waits long on a store that hangs.
    const double timeout =
        std::min(m_options.timeoutSeconds, std::max(10.0, 5.0 * m_options.heartbeatSeconds));
    storeOptions.timeout = toMilliseconds(timeout);
    m_heartbeatStore = c10::make_intrusive<c10d::PrefixStore>(
        m_options.storePrefix, c10::make_intrusive<c10d::TCPStore>(m_options.host, storeOptions));
    // The first beat before returning: after the rendezvous every rank's
    // counter exists, so a diagnosis never mistakes a slow start for death.
    m_heartbeatStore->add(heartbeatKey(m_options.rank), 1);
    m_sent = 1;
    m_heartbeat.emplace(toMilliseconds(m_options.heartbeatSeconds), [this] { return beat(); });
}

bool Liveness::beat()
{
    try {
        m_heartbeatStore->add(heartbeatKey(m_options.rank), 1);
        ++m_sent;
        if (m_heartbeatStore->check({kVerdictKey})) {
            const std::vector<std::uint8_t> bytes = m_heartbeatStore->get(kVerdictKey);
            // A verdict not signed with the run secret is not a rank's, and is not repeated.
            std::string verdict = verifiedText(
                m_options.runSecret, m_options.runId, std::string(bytes.begin(), bytes.end()));
            std::lock_guard verdictLock(m_verdictMutex);
            m_verdict = std::move(verdict);
        }
        return true;
    } catch (const std::exception&) {
        // The store is gone (rank 0 exited or died). Nothing to tell: the
        // next collective fails and its diagnosis says so.
        return false;
    }
}

std::vector<std::int64_t> Liveness::readCounters() const
{
    std::vector<std::int64_t> counters;
    for (int rank = 0; rank < m_options.worldSize; ++rank)
        counters.push_back(m_store->add(heartbeatKey(rank), 0)); // add 0: read without waiting
    return counters;
}

std::string Liveness::publishedVerdict() const
{
    std::lock_guard lock(m_verdictMutex);
    return m_verdict;
}

std::string Liveness::explainFailure(
    const std::string& operation, const std::string& group, const std::string& backendMessage) const
{
    const std::string prefix = operation + " on group '" + group + "' failed: ";
    const std::string suffix = "; " + m_options.backendName + " said: " + backendMessage;
    try {
        // Peers that fail after us then know we stopped because of a failure
        // we saw, not as the cause.
        m_store->set(failedKey(m_options.rank), std::vector<std::uint8_t>{1});
        const auto start = std::chrono::steady_clock::now();
        const auto before = readCounters();
        const double window = std::max(0.5, 2.5 * m_options.heartbeatSeconds);
        std::this_thread::sleep_for(toMilliseconds(window));
        auto after = readCounters();
        const auto quiet = [&](int rank) {
            return rank != m_options.rank
                && after[static_cast<std::size_t>(rank)] == before[static_cast<std::size_t>(rank)]
                && !m_store->check({failedKey(rank)});
        };
        // A rank that looks silent gets a second window before it is named:
        // on a loaded machine a live rank's heartbeat thread can miss one
        // (seen once in CI: a survivor named beside the rank that died).
        bool anyQuiet = false;
        for (int rank = 0; rank < m_options.worldSize; ++rank)
            anyQuiet = anyQuiet || quiet(rank);
        if (anyQuiet) {
            std::this_thread::sleep_for(toMilliseconds(window));
            after = readCounters();
        }
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

        std::vector<int> silent;
        std::vector<int> failedToo;
        for (int rank = 0; rank < m_options.worldSize; ++rank) {
            if (rank == m_options.rank
                || after[static_cast<std::size_t>(rank)] != before[static_cast<std::size_t>(rank)])
                continue;
            if (m_store->check({failedKey(rank)}))
                failedToo.push_back(rank);
            else
                silent.push_back(rank);
        }
        if (silent.empty() && failedToo.empty())
            return prefix + "every rank still sends heartbeats, so none died (the timeout of "
                + common::formatFixed(m_options.timeoutSeconds, 1) + " s"
                + " passed, or the ranks called different collectives)" + suffix;
        std::string text = prefix;
        if (!silent.empty()) {
            const std::string verdict = listRanks(silent) + " stopped responding (no heartbeat for "
                + common::formatFixed(waited, 1) + " s)";
            const std::string signedVerdict =
                signText(m_options.runSecret, m_options.runId, verdict);
            m_store->set(
                kVerdictKey, std::vector<std::uint8_t>(signedVerdict.begin(), signedVerdict.end()));
            text += verdict;
        }
        if (!failedToo.empty())
            text += std::string(silent.empty() ? "" : "; ") + listRanks(failedToo)
                + " stopped after a collective failed there too";
        // Rank 0 serves the store: leaving at once could keep the others'
        // heartbeat threads from reading the verdict just published.
        if (m_options.rank == 0)
            std::this_thread::sleep_for(toMilliseconds(window));
        return text + suffix;
    } catch (const std::exception& error) {
        if (const std::string verdict = publishedVerdict(); !verdict.empty())
            return prefix + verdict + ", as another rank found before the store closed" + suffix;
        return prefix + "rank 0 (which serves the rendezvous store at " + m_options.host + ":"
            + std::to_string(m_options.port) + ") is gone: the store said "
            + describeTorchError(error) + suffix;
    }
}

} // namespace tb::dist
