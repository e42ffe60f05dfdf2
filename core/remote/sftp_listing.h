#pragma once

// What `fetch` copies: a remote folder's regular files, listed over SFTP.
#include "common/error.h"
#include "remote/ssh_session.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tb::remote {

struct RemoteFile {
    std::string relative; // to the listed folder, '/'-separated
    uint64_t size = 0;
};

struct RemoteListing {
    std::vector<RemoteFile> files;
    std::size_t entries = 0; // every entry seen, folders and links too
};

// Every regular file under `root`, over SFTP's readdir (no shell, one name
// per entry): each name is checked as one path component (remote_names.h),
// symbolic links are not followed, partial copies (.tbpart) are left out.
// More than 32 folders deep or more than 20,000 entries is an Error naming
// the folder: a run's exports hold tens, and a host answering readdir for
// ever would otherwise fill this machine's memory.
common::Status listRemoteTree(
    SshSession& session, sftp_session_struct* sftp, const std::string& root, RemoteListing& into);

} // namespace tb::remote
