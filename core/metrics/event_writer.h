#pragma once

#include "metrics/event.h"

#include <memory>
#include <mutex>
#include <string>

namespace tb::metrics {

// Appends events to a JSON-lines file. Each event goes out as one write() of
// a whole line on an O_APPEND descriptor, so a reader following the file, or
// a writer killed at any instant, never leaves half a line behind except when
// the kernel itself is interrupted mid-write; that torn line is closed with a
// newline when the file is next opened, so it costs one malformed line and
// never corrupts the event after it.
class EventWriter {
public:
    static common::Result<std::unique_ptr<EventWriter>> open(const std::string& path, int rank);
    ~EventWriter();

    EventWriter(const EventWriter&) = delete;
    EventWriter& operator=(const EventWriter&) = delete;

    common::Status write(EventType type, nlohmann::json fields);
    common::Status writeLine(const std::string& jsonLine); // already serialised, no newline

    // fsync: after run_end and checkpoints, so the record survives a crash.
    void sync();

    const std::string& path() const { return m_path; }
    int rank() const { return m_rank; }

private:
    EventWriter(std::string path, int fd, int rank);

    std::string m_path;
    int m_fd = -1;
    int m_rank = 0;
    std::mutex m_mutex;
};

} // namespace tb::metrics
