#include "common/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

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

// The process's umask, read without setting it (umask(2) would, for every
// thread at once); 022 where /proc does not say.
mode_t currentUmask()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.starts_with("Umask:"))
            return mode_t(std::stoul(line.substr(6), nullptr, 8));
    }
    return 022;
}

mode_t finalMode(const std::string& target, const FileMode& mode)
{
    if (mode)
        return mode_t(*mode);
    struct stat existing { };
    if (::lstat(target.c_str(), &existing) == 0 && S_ISREG(existing.st_mode))
        return existing.st_mode & 07777;
    return 0666 & ~currentUmask();
}

} // namespace

AtomicFile::AtomicFile(std::string target, FileMode mode)
    : m_target(std::move(target))
    , m_tempPath(m_target + ".tmp.XXXXXX")
    , m_mode(mode)
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
    // mkstemp creates 0600: the file gets its own mode before anyone can see it.
    if (::fchmod(m_fd, finalMode(m_target, m_mode)) != 0)
        return false;
    if (::fsync(m_fd) != 0)
        return false;
    if (::close(std::exchange(m_fd, -1)) != 0)
        return false;
    if (::rename(m_tempPath.c_str(), m_target.c_str()) != 0)
        return false;
    m_committed = true;
    syncDirectoryOf(m_target);
    return true;
}

Status writeFileAtomic(const std::string& path, const std::string& content, FileMode mode)
{
    AtomicFile file(path, mode);
    if (!file.isOpen())
        return Error{systemError("cannot create a temporary file for", path), {}};
    if (!file.write(content.data(), content.size()))
        return Error{systemError("cannot write", path), {}};
    if (!file.commit())
        return Error{systemError("cannot replace", path), {}};
    return Ok{};
}

namespace {

Error tooLarge(const std::string& path, const std::string& size, std::size_t maxBytes)
{
    return Error{path + ": " + size + ", more than the " + std::to_string(maxBytes)
            + " bytes this file may hold",
        "is it the file meant? (a dataset or a model given where a config was expected)"};
}

} // namespace

Result<std::string> readFile(const std::string& path, std::size_t maxBytes)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error{systemError("cannot open", path), {}};
    std::error_code error;
    if (std::filesystem::is_regular_file(path, error)) {
        const std::uintmax_t size = std::filesystem::file_size(path, error);
        if (!error && size > maxBytes)
            return tooLarge(path, std::to_string(size) + " bytes", maxBytes);
    }
    std::string text;
    std::vector<char> chunk(std::size_t{1} << 16);
    while (in.read(chunk.data(), std::streamsize(chunk.size())) || in.gcount() > 0) {
        text.append(chunk.data(), std::size_t(in.gcount()));
        if (text.size() > maxBytes)
            return tooLarge(path, "more than that read and no end yet", maxBytes);
    }
    if (in.bad())
        return Error{systemError("cannot read", path), {}};
    return text;
}

} // namespace tb::common
