#include "train/staging_directory.h"

#include "common/atomic_file.h"

#include <fcntl.h>
#include <stdio.h> // renameat2, RENAME_EXCHANGE (glibc 2.28)
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace tb::train {

namespace fs = std::filesystem;
using common::Error;

namespace {

bool syncPath(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok;
}

constexpr const char* kStagingMarker = ".tmp-";
constexpr std::string_view kAsideSuffix = "-old";

// Swaps the two folders in one step, so that the final name always holds
// one of them, whatever kills the process.
bool swapFolders(const std::string& a, const std::string& b)
{
    return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0;
}

} // namespace

common::Result<StagingDirectory> StagingDirectory::create(const std::string& finalPath)
{
    const fs::path target(finalPath);
    const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    const std::string staging =
        (parent / ("." + target.filename().string() + kStagingMarker + std::to_string(::getpid())))
            .string();
    std::error_code error;
    fs::create_directories(parent, error);
    if (error)
        return Error::at(parent.string(), "", "cannot create the folder: " + error.message());
    fs::remove_all(staging, error);
    if (!fs::create_directory(staging, error) || error)
        return Error::at(staging, "", "cannot create the folder: " + error.message());
    return StagingDirectory(finalPath, staging);
}

StagingDirectory::StagingDirectory(std::string finalPath, std::string staging)
    : m_final(std::move(finalPath))
    , m_staging(std::move(staging))
{
}

StagingDirectory::StagingDirectory(StagingDirectory&& other) noexcept
    : m_final(std::move(other.m_final))
    , m_staging(std::move(other.m_staging))
    , m_done(other.m_done)
{
    other.m_done = true;
}

StagingDirectory::~StagingDirectory()
{
    if (!m_done) {
        std::error_code ignored;
        fs::remove_all(m_staging, ignored);
    }
}

common::Status StagingDirectory::commit()
{
    if (!syncPath(m_staging))
        return Error::at(
            m_staging, "", std::string("cannot sync the folder: ") + std::strerror(errno));
    std::error_code error;
    const fs::path parent =
        fs::path(m_final).has_parent_path() ? fs::path(m_final).parent_path() : fs::path(".");
    if (fs::exists(m_final, error) && swapFolders(m_staging, m_final)) {
        m_done = true;
        syncPath(parent.string());
        fs::remove_all(m_staging, error); // the old folder, swapped out
        return common::Ok{};
    }
    // No exchange here (a file system without it): the old folder is moved
    // aside first, and a start after a crash in between puts it back
    // (removeStaleStagingDirectories).
    std::string aside;
    if (fs::exists(m_final, error)) {
        aside = m_staging + std::string(kAsideSuffix);
        fs::remove_all(aside, error);
        fs::rename(m_final, aside, error);
        if (error)
            return Error::at(m_final, "", "cannot move the old folder aside: " + error.message());
    }
    fs::rename(m_staging, m_final, error);
    if (error)
        return Error::at(
            m_final, "", "cannot rename the finished folder into place: " + error.message());
    m_done = true;
    syncPath(parent.string());
    if (!aside.empty())
        fs::remove_all(aside, error);
    return common::Ok{};
}

namespace {

// ".NAME.tmp-PID-old" -> "NAME": the folder a commit moved aside; empty for
// other names.
std::string finalNameOfAside(const std::string& name)
{
    const size_t marker = name.find(kStagingMarker);
    if (!name.starts_with(".") || marker == std::string::npos || marker < 2
        || !name.ends_with(kAsideSuffix))
        return {};
    return name.substr(1, marker - 1);
}

} // namespace

std::vector<std::string> removeStaleStagingDirectories(const std::string& parent)
{
    std::error_code error;
    std::vector<std::string> restored;
    for (const auto& entry : fs::directory_iterator(parent, error)) {
        const std::string finalName = finalNameOfAside(entry.path().filename().string());
        const fs::path finalPath = fs::path(parent) / finalName;
        std::error_code renamed;
        if (!finalName.empty() && !fs::exists(finalPath, renamed)) {
            fs::rename(entry.path(), finalPath, renamed);
            if (!renamed)
                restored.push_back(finalPath.string());
        }
    }
    for (const auto& entry : fs::directory_iterator(parent, error)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with(".") && name.find(kStagingMarker) != std::string::npos) {
            std::error_code ignored;
            fs::remove_all(entry.path(), ignored);
        }
    }
    return restored;
}

common::Status copyFileAtomic(const std::string& from, const std::string& to)
{
    const auto content = common::readFile(from);
    if (!content)
        return content.error();
    if (auto status = common::writeFileAtomic(to, *content); !status)
        return Error::at(to, "", "cannot copy " + from + ": " + status.error().message);
    return common::Ok{};
}

} // namespace tb::train
