#pragma once

#include "metrics/event.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::metrics {

// One line of the stream: an event, or why the line was rejected.
struct StreamItem {
    uint64_t lineNumber = 0; // 1-based
    uint64_t byteOffset = 0; // where the line starts in the stream
    std::optional<Event> event;
    std::string error; // set when event is empty
};

// Turns bytes of a JSON-lines stream into events, from any source (a local
// file, an SSH channel). It keeps an incomplete last line until its newline
// arrives, and knows the byte offset of the first unconsumed byte so a reader
// that reconnects resumes exactly there. A malformed line is reported with
// its number and parsing goes on with the next one.
class EventStreamParser {
public:
    explicit EventStreamParser(uint64_t startOffset = 0, uint64_t firstLineNumber = 1);

    std::vector<StreamItem> feed(std::string_view bytes);

    uint64_t offset() const { return m_offset; } // resume point: start of the pending line
    uint64_t nextLineNumber() const { return m_nextLine; }
    size_t pendingBytes() const { return m_pending.size(); }

    // A line longer than this is reported and dropped, so a stream without
    // newlines cannot grow the buffer without bound.
    static constexpr size_t kMaxLineBytes = size_t{16} << 20;
    // Why a line was rejected is cut to this (a JSON error may quote the
    // line), so an unreadable line costs a reader little however long it is.
    static constexpr size_t kMaxErrorBytes = 1024;

private:
    std::string m_pending;
    uint64_t m_lineBytes = 0; // bytes of the current line seen so far, kept or not
    uint64_t m_offset;
    uint64_t m_nextLine;
    bool m_discarding = false; // inside an over-long line, skipping to its newline
};

} // namespace tb::metrics
