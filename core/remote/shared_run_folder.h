#pragma once

#include "common/error.h"

#include <string>

namespace tb::remote {

class SshSession;

// Whether every node sees node 0's run folder (docs/LAUNCH.md, preflight):
// a multi-node checkpoint is written by every rank into the run folder and
// gathered by rank 0, so a run folder on each node's own disk fails at the
// first checkpoint, hours in. Node 0 writes a marker, every other node looks
// for it, node 0 removes it. Over SFTP: no shell, no quoting.

// Writes `.tunebench-shared-<nonce>` (0600, created, never overwritten) in
// `runDir` there, or in the nearest folder above it that exists when the run
// has not made it yet (a relative path is the login's home's, as for the
// launcher). Returns the marker's path. An Error names the folder and why.
common::Result<std::string> writeSharedMarker(
    SshSession& session, const std::string& runDir, const std::string& nonce);

// Whether `path` exists there. An Error only when it cannot be told (the
// link, a folder that may not be read), naming the path.
common::Result<bool> remotePathExists(SshSession& session, const std::string& path);

// Removes the file `path` there (a marker); an Error names it.
common::Status removeRemoteFile(SshSession& session, const std::string& path);

} // namespace tb::remote
