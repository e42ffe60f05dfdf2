#pragma once

#include "common/error.h"
#include "metrics/event_file_reader.h"
#include "metrics/preference_steps.h"
#include "metrics/run_history.h"

#include <memory>
#include <string>

namespace tb::metrics {

// One event file read incrementally into a RunHistory (and a DPO run's
// figures beside it): each poll() folds in
// what was appended since the last. A file that shrank was started over by a
// new run in the same folder: the history starts over with it.
class FollowedRun {
public:
    explicit FollowedRun(std::string eventsPath);

    // Reads everything new. True when the history changed; an error only
    // when the file cannot be read at all.
    common::Result<bool> poll();

    const RunHistory& history() const { return m_history; }
    const PreferenceHistory& preference() const { return m_preference; }
    const std::string& path() const { return m_path; }

private:
    std::string m_path;
    std::unique_ptr<EventFileReader> m_reader;
    RunHistory m_history;
    PreferenceHistory m_preference;
};

} // namespace tb::metrics
