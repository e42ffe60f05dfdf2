#include "common/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace tb::common {

namespace {

std::string systemError(const std::string& what, const std::string& path)
{
    return what + " '" + path + "': " + std::strerror(errno);
}

} // namespace

bool writeAll(int fd, const char* data, size_t size)
{
    while (size > 0) {
        const ssize_t written = ::write(fd, data, size);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        data += written;
        size -= static_cast<size_t>(written);
    }
    return true;
}

namespace {

void syncDirectoryOf(const std::string& path)
{
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty())
        dir = ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

} // namespace

AtomicFile::AtomicFile(std::string target)
    : m_target(std::move(target))
    , m_tempPath(m_target + ".tmp.XXXXXX")
{
    m_fd = ::mkstemp(m_tempPath.data());
}

AtomicFile::~AtomicFile()
{
    if (m_fd >= 0)
        ::close(m_fd);
    if (!m_committed)
        ::unlink(m_tempPath.c_str());
}

bool AtomicFile::write(const void* data, size_t size)
{
    return writeAll(m_fd, static_cast<const char*>(data), size);
}

bool AtomicFile::commit()
{
    if (::fsync(m_fd) != 0)
        return false;
    if (::close(std::exchange(m_fd, -1)) != 0)
        return false;
    // mkstemp creates 0600; a config, checkpoint or weight file gets the usual mode.
    ::chmod(m_tempPath.c_str(), 0644);
    if (::rename(m_tempPath.c_str(), m_target.c_str()) != 0)
        return false;
    m_committed = true;
    syncDirectoryOf(m_target);
    return true;
}

Status writeFileAtomic(const std::string& path, const std::string& content)
{
    AtomicFile file(path);
    if (!file.isOpen())
        return Error{systemError("cannot create a temporary file for", path), {}};
    if (!file.write(content.data(), content.size()))
        return Error{systemError("cannot write", path), {}};
    if (!file.commit())
        return Error{systemError("cannot replace", path), {}};
    return Ok{};
}

Result<std::string> readFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error{systemError("cannot open", path), {}};
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad())
        return Error{systemError("cannot read", path), {}};
    return buffer.str();
}

} // namespace tb::common
