#include "metrics/event_stream_parser.h"

#include "common/text.h"

namespace tb::metrics {

EventStreamParser::EventStreamParser(uint64_t startOffset, uint64_t firstLineNumber)
    : m_offset(startOffset)
    , m_nextLine(firstLineNumber)
{
}

std::vector<StreamItem> EventStreamParser::feed(std::string_view bytes)
{
    std::vector<StreamItem> items;
    while (!bytes.empty()) {
        const size_t newline = bytes.find('\n');
        const std::string_view chunk = bytes.substr(0, newline);
        m_lineBytes += chunk.size();
        if (!m_discarding)
            m_pending.append(chunk);
        if (!m_discarding && m_pending.size() > kMaxLineBytes) {
            items.push_back({m_nextLine, m_offset, std::nullopt,
                "line longer than " + std::to_string(kMaxLineBytes) + " bytes; skipped"});
            m_discarding = true;
            m_pending.clear();
            m_pending.shrink_to_fit();
        }
        if (newline == std::string_view::npos)
            break;
        bytes.remove_prefix(newline + 1);

        const uint64_t lineStart = m_offset;
        m_offset += m_lineBytes + 1;
        if (!m_discarding && m_pending.find_first_not_of(" \t\r") != std::string::npos) {
            auto parsed = parseEvent(m_pending);
            if (parsed)
                items.push_back({m_nextLine, lineStart, std::move(parsed).value(), {}});
            else
                items.push_back({m_nextLine, lineStart, std::nullopt,
                    common::clipText(parsed.error().toString(), kMaxErrorBytes)});
        }
        m_pending.clear();
        m_lineBytes = 0;
        m_discarding = false;
        ++m_nextLine;
    }
    return items;
}

} // namespace tb::metrics
