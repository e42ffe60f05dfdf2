#include "metrics/live_catalog.h"

#include <algorithm>
#include <filesystem>

namespace tb::metrics {

namespace fs = std::filesystem;

void LiveCatalog::setRoot(const std::string& root)
{
    m_root = root;
    m_runs.clear();
}

std::set<std::string> LiveCatalog::refresh()
{
    const std::vector<std::string> dirs =
        m_root.empty() ? std::vector<std::string>() : findRunFolders(m_root);
    std::set<std::string> changed;
    // A folder deleted since: gone from the list too.
    std::erase_if(m_runs, [&](const auto& run) {
        const bool gone = !std::binary_search(dirs.begin(), dirs.end(), run.first);
        if (gone)
            changed.insert(run.first);
        return gone;
    });
    for (const std::string& dir : dirs) {
        auto [it, added] = m_runs.try_emplace(dir);
        if (added)
            it->second.rank0 =
                std::make_unique<FollowedRun>((fs::path(dir) / kRank0EventsFile).string());
        if (pollRun(dir, it->second) || added)
            changed.insert(dir);
    }
    return changed;
}

bool LiveCatalog::pollRun(const std::string& dir, Run& run)
{
    const common::Result<bool> read = run.rank0->poll();
    run.problem = read ? std::string() : read.error().toString();
    bool changed = read && *read;
    if (!m_ranksRead.contains(dir))
        return changed;
    for (const auto& [rank, path] : rankEventFiles(dir)) {
        std::unique_ptr<FollowedRun>& follower = run.ranks[rank];
        if (!follower)
            follower = std::make_unique<FollowedRun>(path);
        const common::Result<bool> rankRead = follower->poll();
        changed = changed || (rankRead && *rankRead);
    }
    return changed;
}

std::vector<RunEntry> LiveCatalog::entries() const
{
    std::vector<RunEntry> entries;
    entries.reserve(m_runs.size());
    for (const auto& [dir, run] : m_runs) {
        entries.push_back(summariseRun(dir, run.rank0->history()));
        if (!run.problem.empty())
            entries.back().problem = run.problem;
    }
    return entries;
}

const RunHistory* LiveCatalog::history(const std::string& dir) const
{
    const auto it = m_runs.find(dir);
    return it == m_runs.end() ? nullptr : &it->second.rank0->history();
}

const PreferenceHistory* LiveCatalog::preference(const std::string& dir) const
{
    const auto it = m_runs.find(dir);
    return it == m_runs.end() ? nullptr : &it->second.rank0->preference();
}

std::vector<std::pair<int, const RunHistory*>> LiveCatalog::rankHistories(
    const std::string& dir) const
{
    std::vector<std::pair<int, const RunHistory*>> ranks;
    const auto it = m_runs.find(dir);
    if (it == m_runs.end())
        return ranks;
    for (const auto& [rank, follower] : it->second.ranks)
        ranks.emplace_back(rank, &follower->history());
    return ranks;
}

} // namespace tb::metrics
