#include "launch/line_splitter.h"

#include <algorithm>

namespace tb::launch {

LineSplitter::LineSplitter(size_t maxLineBytes)
    : m_maxLineBytes(std::max<size_t>(1, maxLineBytes))
{
}

void LineSplitter::append(std::string_view bytes, const LineHandler& handler)
{
    while (!bytes.empty()) {
        const size_t room = m_maxLineBytes - m_pending.size();
        const size_t newline = bytes.substr(0, room).find('\n');
        if (newline == std::string_view::npos) {
            const size_t take = std::min(room, bytes.size());
            m_pending.append(bytes.substr(0, take));
            bytes.remove_prefix(take);
            if (m_pending.size() >= m_maxLineBytes) {
                handler(m_pending);
                m_pending.clear();
            }
            continue;
        }
        m_pending.append(bytes.substr(0, newline));
        bytes.remove_prefix(newline + 1);
        if (!m_pending.empty() && m_pending.back() == '\r')
            m_pending.pop_back();
        handler(m_pending);
        m_pending.clear();
    }
}

void LineSplitter::finish(const LineHandler& handler)
{
    if (m_pending.empty())
        return;
    if (m_pending.back() == '\r')
        m_pending.pop_back();
    handler(m_pending);
    m_pending.clear();
}

} // namespace tb::launch
