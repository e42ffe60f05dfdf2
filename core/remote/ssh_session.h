#pragma once

#include "common/error.h"
#include "remote/ssh_target.h"

#include <memory>
#include <string>

// libssh's handles, kept out of every header but this one.
struct ssh_session_struct;
struct sftp_session_struct;

namespace tb::remote {

struct [[nodiscard]] CommandResult {
    int exitStatus = -1;
    std::string output; // stdout
    std::string errorOutput; // stderr
};

// One authenticated SSH connection. Use it from one thread at a time.
class SshSession {
public:
    // Connects, checks the host key against the known-hosts file (an
    // unknown or changed key is an Error that gives its SHA-256 fingerprint
    // and how to check and add it) and authenticates with a key. Every
    // Error names target.describe().
    static common::Result<std::unique_ptr<SshSession>> connect(const SshTarget& target);
    ~SshSession();
    SshSession(const SshSession&) = delete;
    SshSession& operator=(const SshSession&) = delete;

    // Runs `command` through the remote user's shell (quote its words with
    // launch::shellQuote) and waits for it, at
    // most the target's timeout. A failure to run it is an Error; a command
    // that ran and failed is a CommandResult with its exit status.
    common::Result<CommandResult> run(const std::string& command);

    // The SFTP subsystem, opened on first use.
    common::Result<sftp_session_struct*> sftp();

    const SshTarget& target() const { return m_target; }

private:
    SshSession(const SshTarget& target, ssh_session_struct* session);

    SshTarget m_target;
    ssh_session_struct* m_session = nullptr;
    sftp_session_struct* m_sftp = nullptr;
};

} // namespace tb::remote
