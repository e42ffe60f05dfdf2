#include "remote/ssh_connect_steps.h"

#include "common/text.h"
#include "launch/text_quote.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>

namespace tb::remote::ssh_detail {

using common::Error;

namespace {

// "SHA256:..." of the server's host key, as ssh prints it.
std::string hostKeyFingerprint(ssh_session session)
{
    ssh_key key = nullptr;
    if (ssh_get_server_publickey(session, &key) != SSH_OK)
        return "(no host key)";
    unsigned char* hash = nullptr;
    size_t length = 0;
    std::string text = "(unreadable host key)";
    if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &length) == 0) {
        char* fingerprint = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, length);
        if (fingerprint) {
            text = fingerprint;
            ssh_string_free_char(fingerprint);
        }
        ssh_clean_pubkey_hash(&hash);
    }
    ssh_key_free(key);
    return text;
}

// How to check an unknown key, never by trusting what the network answers
// (ssh-keyscan would add whatever key a man in the middle shows): compare
// the fingerprint with one got out of band, then add the key. Every word of
// the commands is shell-quoted.
std::string unknownKeyHint(const SshTarget& target, const std::string& file)
{
    const int port = target.port > 0 ? target.port : 22;
    // The default file's "~/" is left for the shell to expand.
    const std::string quotedFile = file.starts_with("~/")
        ? "~/" + launch::shellQuote(file.substr(2))
        : launch::shellQuote(file);
    const std::string name =
        port == 22 ? target.host : "[" + target.host + "]:" + std::to_string(port);
    return "compare it with the fingerprint the machine's administrator gives you (on the machine: "
           "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub); what the file holds for this host: "
           "ssh-keygen -F "
        + launch::shellQuote(name) + " -f " + quotedFile
        + ". Only if they match, add the key with: ssh -o UserKnownHostsFile=" + quotedFile + " -p "
        + std::to_string(port) + " " + launch::shellQuote(target.host)
        + " (it asks before it writes)";
}

// One option, refused with its name and value rather than ignored: an
// unset known-hosts file would fall back to ~/.ssh/known_hosts, a host name
// libssh rejects would fail later as "cannot read ~/.ssh/config".
common::Status setOption(ssh_session session, const SshTarget& target, ssh_options_e option,
    const void* value, const std::string& name, const std::string& shown)
{
    if (ssh_options_set(session, option, value) == SSH_OK)
        return common::Ok{};
    return Error{target.describe() + ": libssh refused the option " + name + " '"
            + common::escapeControl(shown) + "': " + sessionError(session),
        {}};
}

} // namespace

std::string sessionError(ssh_session session)
{
    return ssh_get_error(session);
}

common::Status verifyHostKey(ssh_session session, const SshTarget& target)
{
    const std::string where = target.describe();
    const std::string file =
        target.knownHostsFile.empty() ? std::string("~/.ssh/known_hosts") : target.knownHostsFile;
    switch (ssh_session_is_known_server(session)) {
    case SSH_KNOWN_HOSTS_OK:
        return common::Ok{};
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
        return Error{where + ": the host key changed (now " + hostKeyFingerprint(session)
                + ", not the one in " + file + "): refusing to connect",
            "if the machine was reinstalled, remove its old line from " + file
                + " and check the new key with its administrator"};
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
        return Error{where + ": host key " + hostKeyFingerprint(session) + " is not in " + file,
            unknownKeyHint(target, file)};
    case SSH_KNOWN_HOSTS_ERROR:
        break;
    }
    return Error{
        where + ": cannot check the host key against " + file + ": " + sessionError(session), {}};
}

common::Status authenticate(ssh_session session, const SshTarget& target)
{
    const std::string where = target.describe();
    if (target.identityFile.empty()) {
        if (ssh_userauth_publickey_auto(session, nullptr, nullptr) == SSH_AUTH_SUCCESS)
            return common::Ok{};
        return Error{where + ": no key was accepted (ssh-agent and the keys in ~/.ssh tried): "
                + sessionError(session),
            "give the key with --identity, or add this machine's public key to the remote "
            "~/.ssh/authorized_keys"};
    }
    ssh_key key = nullptr;
    if (ssh_pki_import_privkey_file(target.identityFile.c_str(), nullptr, nullptr, nullptr, &key)
        != SSH_OK)
        return Error{"identity file '" + target.identityFile
                + "': cannot read a private key (missing, unreadable, or protected by a "
                  "passphrase)",
            "use an unencrypted key, or leave --identity out to use ssh-agent"};
    const int result = ssh_userauth_publickey(session, nullptr, key);
    ssh_key_free(key);
    if (result == SSH_AUTH_SUCCESS)
        return common::Ok{};
    return Error{where + ": the key in '" + target.identityFile + "' was not accepted",
        "is its public key in the remote ~/.ssh/authorized_keys?"};
}

// The kernel notices a peer that vanished: keepalive probes after `idle`
// seconds of silence, and unacknowledged data given up on after twice the
// timeout. libssh 0.10 ignores ServerAliveInterval and TCPKeepAlive.
void keepAlive(int socket, long idle)
{
    const int on = 1;
    const int seconds = static_cast<int>(idle);
    const int probes = 3;
    const unsigned int userTimeout = static_cast<unsigned int>(2 * idle * 1000);
    ::setsockopt(socket, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    ::setsockopt(socket, IPPROTO_TCP, TCP_KEEPIDLE, &seconds, sizeof seconds);
    ::setsockopt(socket, IPPROTO_TCP, TCP_KEEPINTVL, &seconds, sizeof seconds);
    ::setsockopt(socket, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    ::setsockopt(socket, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof userTimeout);
}

common::Status setOptions(ssh_session session, const SshTarget& target)
{
    // Seconds and microseconds: a preflight of thousands of nodes may give
    // each unreachable one less than a second.
    const double seconds = std::max(0.1, target.timeoutSeconds);
    const long timeout = static_cast<long>(seconds);
    const long timeoutMicroseconds = static_cast<long>((seconds - double(timeout)) * 1e6);
    const unsigned int port = static_cast<unsigned int>(target.port);
    common::Status set =
        setOption(session, target, SSH_OPTIONS_HOST, target.host.c_str(), "Host", target.host);
    // OpenSSH's client config (Host, HostName, User, Port, IdentityFile,
    // ProxyJump), read first so what is given explicitly below wins, as on
    // ssh's command line.
    if (set && ssh_options_parse_config(session, nullptr) != SSH_OK)
        return Error{
            target.describe() + ": cannot read ~/.ssh/config: " + sessionError(session), {}};
    if (set && port > 0)
        set = setOption(session, target, SSH_OPTIONS_PORT, &port, "Port", std::to_string(port));
    if (set)
        set = setOption(
            session, target, SSH_OPTIONS_TIMEOUT, &timeout, "Timeout", std::to_string(timeout));
    if (set)
        set = setOption(session, target, SSH_OPTIONS_TIMEOUT_USEC, &timeoutMicroseconds,
            "Timeout (microseconds)", std::to_string(timeoutMicroseconds));
    if (set && !target.user.empty())
        set =
            setOption(session, target, SSH_OPTIONS_USER, target.user.c_str(), "User", target.user);
    if (set && !target.knownHostsFile.empty())
        set = setOption(session, target, SSH_OPTIONS_KNOWNHOSTS, target.knownHostsFile.c_str(),
            "UserKnownHostsFile", target.knownHostsFile);
    return set;
}

} // namespace tb::remote::ssh_detail
