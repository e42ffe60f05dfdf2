#pragma once

#include "common/error.h"
#include "remote/ssh_session.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tb::remote {

// Files copied over SFTP, for `launch --hostfile --sync` (the run's inputs to
// every node) and `fetch` (a run's exports back). A file already there with
// the same size and SHA-256 is skipped; a copy is written to PATH.tbpart and
// renamed once its SHA-256 matches the source, so a file is either whole or
// absent under its name; an interrupted copy goes on from the .tbpart it
// left (when that part's SHA-256 is the source's first bytes).
// What a copy under way is written as, beside its file: NAME.tbpart.
inline constexpr const char* kPartSuffix = ".tbpart";

struct TransferProgress {
    std::string path; // the file being copied (its destination)
    uint64_t fileBytesDone = 0;
    uint64_t fileBytes = 0;
    uint64_t bytesDone = 0; // all files
    uint64_t bytes = 0;
};
using ProgressCallback = std::function<void(const TransferProgress&)>;

struct TransferSummary {
    int copied = 0;
    int resumed = 0; // of copied: went on from an earlier part
    int skipped = 0; // already equal
    uint64_t bytesSent = 0;
};

// Copies each local file to the same absolute path on the machine at the
// other end of `session`, making folders as needed.
common::Result<TransferSummary> uploadFiles(
    SshSession& session, const std::vector<std::string>& paths, const ProgressCallback& progress);

// Whether `path` is a folder on the machine at the other end of `session`.
bool remoteFolderExists(SshSession& session, const std::string& path);

// Copies every regular file under `remoteDir` (recursively, listed over
// SFTP, symbolic links not followed) to `localDir`, keeping relative paths.
// A name that could leave `localDir` (remote_names.h) fails the whole copy
// before any file is written, and no local symbolic link is written through.
common::Result<TransferSummary> downloadTree(SshSession& session, const std::string& remoteDir,
    const std::string& localDir, const ProgressCallback& progress);

} // namespace tb::remote
