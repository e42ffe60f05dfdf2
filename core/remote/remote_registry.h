#pragma once

#include "common/error.h"
#include "launch/run_registry.h"
#include "remote/ssh_session.h"

#include <string>
#include <vector>

namespace tb::remote {

// The run registry of the machine at the other end of `session`, read by
// its own `tunebench-cli node-check --registry` (`remoteCli` is its path
// there), only run `runId`'s entries when that is not empty.
common::Result<std::vector<launch::RegistryEntry>> remoteRegistry(
    SshSession& session, const std::string& remoteCli, const std::string& runId = {});

} // namespace tb::remote
