#include "train/staging_directory.h"

#include "common/atomic_file.h"

#include <fcntl.h>
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
    std::string aside;
    if (fs::exists(m_final, error)) {
        aside = m_staging + "-old";
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
    const fs::path parent =
        fs::path(m_final).has_parent_path() ? fs::path(m_final).parent_path() : fs::path(".");
    syncPath(parent.string());
    if (!aside.empty())
        fs::remove_all(aside, error);
    return common::Ok{};
}

void removeStaleStagingDirectories(const std::string& parent)
{
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(parent, error)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with(".") && name.find(kStagingMarker) != std::string::npos) {
            std::error_code ignored;
            fs::remove_all(entry.path(), ignored);
        }
    }
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
