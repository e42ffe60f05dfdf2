#pragma once

#include "common/error.h"

#include <string>
#include <vector>

namespace tb::train {

// A folder written as a whole or not at all: files go into a hidden
// sibling (".<name>.tmp-<pid>"), and commit() fsyncs it and renames it to
// the final name, then fsyncs the parent, so a crash leaves either the old
// folder or the new one, never a half-written one. (A non-empty folder
// cannot be renamed over, so an existing one is first renamed aside and
// removed after.) Uncommitted staging folders are removed on destruction.
class StagingDirectory {
public:
    static common::Result<StagingDirectory> create(const std::string& finalPath);
    StagingDirectory(StagingDirectory&& other) noexcept;
    StagingDirectory& operator=(StagingDirectory&&) = delete;
    StagingDirectory(const StagingDirectory&) = delete;
    ~StagingDirectory();

    const std::string& path() const { return m_staging; } // write here
    std::string file(const std::string& name) const { return m_staging + "/" + name; }
    common::Status commit();

private:
    StagingDirectory(std::string finalPath, std::string staging);

    std::string m_final;
    std::string m_staging;
    bool m_done = false;
};

// Removes staging folders a killed process left in `parent`, after putting
// back under its name a folder that a commit had moved aside when the
// process died before the new one took its place. Returns those put back.
std::vector<std::string> removeStaleStagingDirectories(const std::string& parent);

// Copies a file (the bytes, atomically); the error names both paths.
common::Status copyFileAtomic(const std::string& from, const std::string& to);

} // namespace tb::train
