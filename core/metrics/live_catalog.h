#pragma once

#include "metrics/followed_run.h"
#include "metrics/run_catalog.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tb::metrics {

// The runs under a folder, kept up to date: each refresh() finds new run
// folders and reads only what each run appended since the last one. For the
// runs being compared it also reads the other ranks' streams
// (events.rank<N>.jsonl), for step time and memory by rank.
class LiveCatalog {
public:
    // Forgets every run when the folder changes.
    void setRoot(const std::string& root);
    void setRanksRead(const std::set<std::string>& dirs) { m_ranksRead = dirs; }

    // The folders whose history changed (found, appended to, started over,
    // deleted).
    std::set<std::string> refresh();

    std::vector<RunEntry> entries() const;
    const RunHistory* history(const std::string& dir) const;
    // A DPO run's figures beside its history (none for a supervised run).
    const PreferenceHistory* preference(const std::string& dir) const;
    // Ranks 1 and up, for a run in setRanksRead(), by rank.
    std::vector<std::pair<int, const RunHistory*>> rankHistories(const std::string& dir) const;

private:
    struct Run {
        std::unique_ptr<FollowedRun> rank0;
        std::string problem;
        std::map<int, std::unique_ptr<FollowedRun>> ranks;
    };
    bool pollRun(const std::string& dir, Run& run);

    std::string m_root;
    std::set<std::string> m_ranksRead;
    std::map<std::string, Run> m_runs;
};

} // namespace tb::metrics
