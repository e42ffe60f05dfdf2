#pragma once

#include "common/error.h"
#include "metrics/run_history.h"
#include "remote/ssh_session.h"

namespace tb::remote {

// The graceful stop of metrics/run_control.h on the machine at the other
// end of `session`: its host name and rank 0's command line are read there,
// then `kill -TERM <pid>` runs there. Ok(pid) when the signal was sent.
common::Result<long long> stopRemoteRun(SshSession& session, const metrics::RunHistory& history);

} // namespace tb::remote
