#pragma once

#include "remote/host_facts.h"
#include "remote/ssh_session.h"

namespace tb::remote {

// Runs the script over `session`.
common::Result<HostFacts> probeHost(SshSession& session);

// Runs it on this machine (/bin/sh).
common::Result<HostFacts> probeLocalHost();

} // namespace tb::remote
