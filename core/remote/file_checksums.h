#pragma once

#include "common/error.h"
#include "remote/ssh_session.h"

#include <cstdint>
#include <string>

// SHA-256 of files here and on the other end of an SSH session: how
// transfers check what they copied and skip what is there already.
namespace tb::remote {

// How long a remote `sha256sum` of `bytes` may take: the SSH timeout for
// the round trip and start, plus the bytes at 50 MB/s (a busy cloud disk,
// or a CPU without SHA extensions), so a large file's checksum is not cut
// off at the timeout meant for short commands.
double checksumSeconds(double timeoutSeconds, uint64_t bytes);

// SHA-256 of a file here (hex), of its first `length` bytes when given.
common::Result<std::string> localSha256(const std::string& path, uint64_t length = UINT64_MAX);

// sha256sum there of a file, or of its first `bytes` when `prefix`, within
// checksumSeconds() of its size.
common::Result<std::string> remoteSha256(
    SshSession& session, const std::string& path, uint64_t bytes, bool prefix = false);

} // namespace tb::remote
