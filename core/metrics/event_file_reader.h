#pragma once

#include "metrics/event_source.h"
#include "metrics/event_stream_parser.h"

#include <memory>
#include <string>

namespace tb::metrics {

// Follows an event file that a run may still be writing: each poll() reads
// what was appended since the last one. Construct it with a saved offset and
// line number to continue where an earlier reader stopped.
class EventFileReader {
public:
    // A file on this machine.
    explicit EventFileReader(std::string path, uint64_t offset = 0, uint64_t firstLineNumber = 1);
    // A file wherever `source` reads it from (another machine over SFTP).
    explicit EventFileReader(
        std::unique_ptr<EventSource> source, uint64_t offset = 0, uint64_t firstLineNumber = 1);

    // What a poll reads at most by default: a long file already written (or
    // one that is not an event file at all) comes in batches of this size,
    // so a follower holds one batch's events at a time, never the file's.
    static constexpr uint64_t kBytesPerBatch = uint64_t{4} << 20;

    // New complete lines since the last poll, reading at most about
    // `maxBytes` (whole 64 KiB reads); moreAvailable() says whether the file
    // held more than was read. Malformed lines come back as items whose
    // error names the file and line. The file not existing yet is not an
    // error (a run that has not started); a file that shrank is.
    common::Result<std::vector<StreamItem>> poll(uint64_t maxBytes = kBytesPerBatch);
    bool moreAvailable() const { return m_moreAvailable; }

    uint64_t offset() const { return m_parser.offset(); }
    uint64_t nextLineNumber() const { return m_parser.nextLineNumber(); }
    const std::string& path() const { return m_path; }

private:
    std::unique_ptr<EventSource> m_source;
    std::string m_path; // the source's name
    EventStreamParser m_parser;
    uint64_t m_readOffset; // bytes read from the file: offset() plus the pending partial line
    bool m_moreAvailable = false;
};

} // namespace tb::metrics
