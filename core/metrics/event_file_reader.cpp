#include "metrics/event_file_reader.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tb::metrics {

using common::Error;

EventFileReader::EventFileReader(std::string path, uint64_t offset, uint64_t firstLineNumber)
    : m_path(std::move(path))
    , m_parser(offset, firstLineNumber)
    , m_readOffset(offset)
{
}

common::Result<std::vector<StreamItem>> EventFileReader::poll()
{
    return poll(UINT64_MAX);
}

common::Result<std::vector<StreamItem>> EventFileReader::poll(uint64_t maxBytes)
{
    m_moreAvailable = false;
    const int fd = ::open(m_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return std::vector<StreamItem>{};
        return Error{"cannot open the event file '" + m_path + "': " + std::strerror(errno), {}};
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        ::close(fd);
        return Error{"cannot stat '" + m_path + "': " + std::strerror(errno), {}};
    }
    const auto size = static_cast<uint64_t>(info.st_size);
    if (size < m_readOffset) {
        ::close(fd);
        return Error{m_path + ": the file shrank to " + std::to_string(size)
                         + " bytes below the read offset " + std::to_string(m_readOffset),
                     "was the run restarted into the same folder?"};
    }

    std::vector<StreamItem> items;
    std::string buffer(1 << 16, '\0');
    const uint64_t start = m_readOffset;
    while (m_readOffset < size && m_readOffset - start < maxBytes) {
        const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(m_readOffset));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        m_readOffset += static_cast<uint64_t>(n);
        for (StreamItem& item : m_parser.feed(std::string_view(buffer.data(), static_cast<size_t>(n)))) {
            if (!item.event)
                item.error = m_path + ":" + std::to_string(item.lineNumber) + ": " + item.error;
            items.push_back(std::move(item));
        }
    }
    ::close(fd);
    m_moreAvailable = m_readOffset < size;
    return items;
}

} // namespace tb::metrics
