#pragma once

#include "sshd_server.h"

#include "remote/ssh_target.h"

namespace tb::test {

// How a suite logs in to its SshdServer: as the user running the test, with
// the server's user key and known-hosts file.
inline tb::remote::SshTarget loginTarget(const SshdServer& server, double timeoutSeconds = 10)
{
    tb::remote::SshTarget target;
    target.user = server.user().toStdString();
    target.host = "127.0.0.1";
    target.port = server.port();
    target.identityFile = server.userKey().toStdString();
    target.knownHostsFile = server.knownHosts().toStdString();
    target.timeoutSeconds = timeoutSeconds;
    return target;
}

} // namespace tb::test
