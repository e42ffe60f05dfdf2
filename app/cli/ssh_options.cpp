#include "ssh_options.h"

namespace tb::cli {

void addSshOptions(ArgParser& p, const std::string& hostHelp)
{
    p.addOption("host", "[USER@]HOST", hostHelp);
    p.addOption("port", "N", "its SSH port (default: ~/.ssh/config's, else 22)");
    p.addOption("identity", "FILE", "private key (default: ~/.ssh/config, ssh-agent, ~/.ssh keys)");
    p.addOption("known-hosts", "FILE",
        "known hosts file (default ~/.ssh/known_hosts); unknown keys are refused");
    p.addOption("ssh-timeout", "SECONDS",
        "how long connecting, each command and each SFTP call may wait for an answer (default 15;\n"
        "a checksum gets this plus its file's size at 50 MB/s)");
}

common::Result<std::unique_ptr<remote::SshSession>> connectWithOptions(
    const ArgParser& p, const std::string& command)
{
    common::Result<remote::SshTarget> parsed = remote::parseSshTarget(p.value("host"));
    if (!parsed)
        return common::Error{command + ": --host: " + parsed.error().message, parsed.error().hint};
    const common::Result<long long> port = p.integer("port", 0, 1, 65535);
    const common::Result<double> timeout =
        p.number("ssh-timeout", remote::SshTarget{}.timeoutSeconds, 0.1, 3600.0);
    if (!port || !timeout)
        return !port ? port.error() : timeout.error();
    remote::SshTarget target = parsed.value();
    target.port = int(*port);
    target.timeoutSeconds = *timeout;
    target.identityFile = p.value("identity");
    target.knownHostsFile = p.value("known-hosts");
    return remote::SshSession::connect(target);
}

} // namespace tb::cli
