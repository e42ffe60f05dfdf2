#include "metrics/event_writer.h"

#include "common/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tb::metrics {

namespace {

using common::Error;

std::string osError(const std::string& what, const std::string& path)
{
    return what + " '" + path + "': " + std::strerror(errno);
}

// True when the file is empty or its last byte is a newline.
bool endsWithNewline(int fd)
{
    struct stat info { };
    if (::fstat(fd, &info) != 0 || info.st_size == 0)
        return true;
    char last = '\n';
    if (::pread(fd, &last, 1, info.st_size - 1) != 1)
        return true;
    return last == '\n';
}

} // namespace

common::Result<std::unique_ptr<EventWriter>> EventWriter::open(const std::string& path, int rank)
{
    const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return Error{osError("cannot open the event file", path), {}};
    if (!endsWithNewline(fd) && !common::writeAll(fd, "\n", 1)) {
        const std::string message = osError("cannot repair the torn last line of", path);
        ::close(fd);
        return Error{message, {}};
    }
    return std::unique_ptr<EventWriter>(new EventWriter(path, fd, rank));
}

EventWriter::EventWriter(std::string path, int fd, int rank)
    : m_path(std::move(path))
    , m_fd(fd)
    , m_rank(rank)
{
}

EventWriter::~EventWriter()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

common::Status EventWriter::write(EventType type, nlohmann::json fields)
{
    const nlohmann::json event = makeEvent(type, m_rank, nowSeconds(), std::move(fields));
    // Replace invalid UTF-8 rather than throw: a log message may carry any bytes.
    return writeLine(event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

common::Status EventWriter::writeLine(const std::string& jsonLine)
{
    std::string line = jsonLine;
    line.push_back('\n');
    const std::lock_guard lock(m_mutex);
    if (!common::writeAll(m_fd, line.data(), line.size()))
        return Error{osError("cannot write to the event file", m_path), {}};
    return common::Ok{};
}

void EventWriter::sync()
{
    const std::lock_guard lock(m_mutex);
    ::fsync(m_fd);
}

} // namespace tb::metrics
