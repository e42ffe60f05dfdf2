#include "common/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

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

Status writeFileAtomic(const std::string& path, const std::string& content)
{
    std::string tmpl = path + ".tmp.XXXXXX";
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0)
        return Error{systemError("cannot create a temporary file for", path), {}};
    const bool written = writeAll(fd, content.data(), content.size()) && ::fsync(fd) == 0;
    const int savedErrno = errno;
    ::close(fd);
    if (!written) {
        ::unlink(tmpl.c_str());
        errno = savedErrno;
        return Error{systemError("cannot write", path), {}};
    }
    // mkstemp creates 0600; a config or checkpoint should get the usual mode.
    ::chmod(tmpl.c_str(), 0644);
    if (::rename(tmpl.c_str(), path.c_str()) != 0) {
        const int renameErrno = errno;
        ::unlink(tmpl.c_str());
        errno = renameErrno;
        return Error{systemError("cannot replace", path), {}};
    }
    syncDirectoryOf(path);
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
