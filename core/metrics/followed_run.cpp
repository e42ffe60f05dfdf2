#include "metrics/followed_run.h"

namespace tb::metrics {

FollowedRun::FollowedRun(std::string eventsPath)
    : m_path(std::move(eventsPath))
    , m_reader(std::make_unique<EventFileReader>(m_path))
{
}

common::Result<bool> FollowedRun::poll()
{
    bool changed = false;
    bool startedOver = false;
    for (;;) {
        common::Result<std::vector<StreamItem>> items =
            m_reader->poll(EventFileReader::kBytesPerBatch);
        if (!items) {
            if (startedOver)
                return items.error();
            // The file shrank: another run reused the folder.
            m_reader = std::make_unique<EventFileReader>(m_path);
            m_history = RunHistory{};
            m_preference = PreferenceHistory{};
            startedOver = changed = true;
            continue;
        }
        for (const StreamItem& item : *items)
            foldStreamItem(item, m_history, m_preference);
        changed = changed || !items->empty();
        if (!m_reader->moreAvailable())
            return changed;
    }
}

} // namespace tb::metrics
