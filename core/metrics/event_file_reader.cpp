#include "metrics/event_file_reader.h"

#include <cstdint>

namespace tb::metrics {

using common::Error;

EventFileReader::EventFileReader(std::string path, uint64_t offset, uint64_t firstLineNumber)
    : EventFileReader(localEventSource(std::move(path)), offset, firstLineNumber)
{
}

EventFileReader::EventFileReader(
    std::unique_ptr<EventSource> source, uint64_t offset, uint64_t firstLineNumber)
    : m_source(std::move(source))
    , m_path(m_source->name())
    , m_parser(offset, firstLineNumber)
    , m_readOffset(offset)
{
}

common::Result<std::vector<StreamItem>> EventFileReader::poll(uint64_t maxBytes)
{
    m_moreAvailable = false;
    common::Result<std::optional<uint64_t>> opened = m_source->open();
    if (!opened)
        return opened.error();
    if (!opened->has_value())
        return std::vector<StreamItem>{}; // not written yet
    const uint64_t size = **opened;
    if (size < m_readOffset) {
        m_source->close();
        return Error{m_path + ": the file shrank to " + std::to_string(size)
                + " bytes below the read offset " + std::to_string(m_readOffset),
            "was the run restarted into the same folder?"};
    }

    std::vector<StreamItem> items;
    std::string buffer(1 << 16, '\0');
    const uint64_t start = m_readOffset;
    while (m_readOffset < size && m_readOffset - start < maxBytes) {
        const common::Result<std::size_t> n =
            m_source->readAt(m_readOffset, buffer.data(), buffer.size());
        if (!n) {
            m_source->close();
            return n.error();
        }
        if (*n == 0)
            break;
        m_readOffset += *n;
        for (StreamItem& item : m_parser.feed(std::string_view(buffer.data(), *n))) {
            if (!item.event)
                item.error = m_path + ":" + std::to_string(item.lineNumber) + ": " + item.error;
            items.push_back(std::move(item));
        }
    }
    m_source->close();
    m_moreAvailable = m_readOffset < size;
    return items;
}

} // namespace tb::metrics
