#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace tb::launch {

// Turns the chunks a pipe delivers into whole lines, so two ranks writing at
// once never interleave inside a line. A line longer than maxLineBytes is cut
// there (a rank writing megabytes without a newline must not grow our
// memory); the rest continues as the next line. "\r\n" ends a line too.
class LineSplitter {
public:
    using LineHandler = std::function<void(std::string_view line)>;

    explicit LineSplitter(size_t maxLineBytes = size_t{64} << 10);

    // Calls `handler` for each line completed by `bytes` (without its newline).
    void append(std::string_view bytes, const LineHandler& handler);
    // At end of stream: the unfinished last line, if any.
    void finish(const LineHandler& handler);

    size_t pendingBytes() const { return m_pending.size(); }

private:
    size_t m_maxLineBytes;
    std::string m_pending;
};

} // namespace tb::launch
