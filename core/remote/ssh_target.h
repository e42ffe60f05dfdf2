#pragma once

#include "common/error.h"

#include <string>

namespace tb::remote {

// A machine to reach over SSH, and how.
struct SshTarget {
    std::string user; // empty: the current user (or ~/.ssh/config's)
    std::string host;
    int port = 0; // 0: ~/.ssh/config's Port for the host, else 22
    // Empty: ssh-agent, then the default keys in ~/.ssh.
    std::string identityFile;
    // Empty: ~/.ssh/known_hosts. The host's key must be there: an unknown or
    // changed key is refused, never accepted silently.
    std::string knownHostsFile;
    double timeoutSeconds = 15.0; // connecting, and each command

    // "user@host:port" (the port when given), as messages name it.
    std::string describe() const;
};

// "[USER@]HOST" into user and host; an empty host, or an '@' with nothing
// on one side, is an Error naming the text.
common::Result<SshTarget> parseSshTarget(const std::string& text);

} // namespace tb::remote
