#include "metrics/event_source.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tb::metrics {

namespace {

using common::Error;

class LocalEventSource : public EventSource {
public:
    explicit LocalEventSource(std::string path)
        : m_path(std::move(path))
    {
    }
    ~LocalEventSource() override { close(); }

    std::string name() const override { return m_path; }

    common::Result<std::optional<uint64_t>> open() override
    {
        close();
        m_fd = ::open(m_path.c_str(), O_RDONLY | O_CLOEXEC);
        if (m_fd < 0) {
            if (errno == ENOENT)
                return std::optional<uint64_t>{};
            return Error{
                "cannot open the event file '" + m_path + "': " + std::strerror(errno), {}};
        }
        struct stat info { };
        if (::fstat(m_fd, &info) != 0) {
            const std::string reason = std::strerror(errno);
            close();
            return Error{"cannot stat '" + m_path + "': " + reason, {}};
        }
        return std::optional<uint64_t>(static_cast<uint64_t>(info.st_size));
    }

    common::Result<std::size_t> readAt(uint64_t offset, char* buffer, std::size_t length) override
    {
        for (;;) {
            const ssize_t n = ::pread(m_fd, buffer, length, static_cast<off_t>(offset));
            if (n >= 0)
                return static_cast<std::size_t>(n);
            if (errno != EINTR)
                return Error{"cannot read '" + m_path + "': " + std::strerror(errno), {}};
        }
    }

    void close() override
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
    }

private:
    std::string m_path;
    int m_fd = -1;
};

} // namespace

std::unique_ptr<EventSource> localEventSource(std::string path)
{
    return std::make_unique<LocalEventSource>(std::move(path));
}

} // namespace tb::metrics
