#pragma once

#include "metrics/event_source.h"
#include "remote/ssh_session.h"

#include <memory>

namespace tb::remote {

// An event file on the machine at the other end of `session`, read over
// SFTP by offset (no shell, no quoting). The session must outlive it.
std::unique_ptr<metrics::EventSource> sftpEventSource(SshSession& session, std::string path);

} // namespace tb::remote
