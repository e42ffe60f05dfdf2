#pragma once

// The steps of SshSession's connect that need no state of its own: the
// options, the host key, authentication and the socket's keepalive.
#include "common/error.h"
#include "remote/ssh_target.h"

#include <libssh/libssh.h>

#include <string>

namespace tb::remote::ssh_detail {

// libssh's reason for the session's last failure.
std::string sessionError(ssh_session session);

// Every option the target gives (and ~/.ssh/config's), each refusal named
// with its option and value.
common::Status setOptions(ssh_session session, const SshTarget& target);

// The host key against the known-hosts file: an unknown or changed key is an
// Error with its SHA-256 fingerprint and how to check and add it.
common::Status verifyHostKey(ssh_session session, const SshTarget& target);

// The target's key file, or ssh-agent and the keys in ~/.ssh.
common::Status authenticate(ssh_session session, const SshTarget& target);

// The kernel notices a peer that vanished (TCP keepalive and user timeout).
void keepAlive(int socket, long idle);

} // namespace tb::remote::ssh_detail
