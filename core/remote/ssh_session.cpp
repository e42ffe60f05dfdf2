#include "remote/ssh_session.h"

#include "remote/ssh_command_io.h"
#include "remote/ssh_connect_steps.h"

#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <tuple>

namespace tb::remote {

namespace {

using common::Error;
using Clock = std::chrono::steady_clock;
using ssh_detail::authenticate;
using ssh_detail::keepAlive;
using ssh_detail::sessionError;
using ssh_detail::setOptions;
using ssh_detail::verifyHostKey;
using ssh_detail::command_io::afterOutputStart;
using ssh_detail::command_io::cutBeforeOutputStart;
using ssh_detail::command_io::exportableNames;
using ssh_detail::command_io::kPosixShell;
using ssh_detail::command_io::onlyPrintable;
using ssh_detail::command_io::outputError;
using ssh_detail::command_io::posixScript;
using ssh_detail::command_io::readAvailable;
using ssh_detail::command_io::Sending;
using ssh_detail::command_io::sendWithinWindow;
using ssh_detail::command_io::streamingScript;
using ssh_detail::command_io::tooMuchOutput;
using ssh_detail::command_io::wholeSeconds;
using ssh_detail::command_io::writeAll;

} // namespace

std::string libsshVersionProblem(const char* running)
{
    const std::string text = running ? running : "";
    int major = 0, minor = 0, micro = 0;
    if (std::sscanf(text.c_str(), "%d.%d.%d", &major, &minor, &micro) != 3)
        return "cannot tell the version of libssh from '" + text
            + "'; Tunebench needs 0.10.6 or newer";
    if (std::make_tuple(major, minor, micro) >= std::make_tuple(0, 10, 6))
        return {};
    return "libssh " + std::to_string(major) + "." + std::to_string(minor) + "."
        + std::to_string(micro)
        + " is too old: Tunebench needs 0.10.6 or newer (host name checks of CVE-2023-6004, the "
          "Terrapin "
          "mitigation of CVE-2023-48795)";
}

SshSession::Bounded::Bounded(SshSession& session)
    : m_session(session)
{
    ++m_session.m_boundedDepth;
    progressed();
}

SshSession::Bounded::~Bounded()
{
    if (--m_session.m_boundedDepth == 0)
        m_session.m_watchdog.disarm();
}

void SshSession::Bounded::progressed()
{
    const auto limit = std::chrono::milliseconds(
        static_cast<long long>(std::max(1.0, m_session.m_target.timeoutSeconds) * 1000));
    m_session.m_watchdog.arm(ssh_get_fd(m_session.m_session), limit);
}

std::string SshSession::failureReason(std::string otherwise) const
{
    if (m_watchdog.interrupted())
        return "interrupted: the connection was closed to stop";
    if (!timedOut())
        return otherwise;
    return "no answer within "
        + std::to_string(static_cast<int>(std::max(1.0, m_target.timeoutSeconds)))
        + " s: the connection was closed (a hung server or file system, or a network that "
          "drops packets)";
}

common::Result<std::unique_ptr<SshSession>> SshSession::connect(const SshTarget& target)
{
    common::Result<std::unique_ptr<SshSession>> session = prepare(target);
    if (!session)
        return session.error();
    if (common::Status opened = (*session)->open(); !opened)
        return opened.error();
    return session;
}

common::Result<std::unique_ptr<SshSession>> SshSession::prepare(const SshTarget& target)
{
    if (const std::string old = libsshVersionProblem(ssh_version(0)); !old.empty())
        return Error{target.describe() + ": " + old,
            "install libssh 0.10.6 or newer (libssh-4 on Debian 12)"};
    ssh_session session = ssh_new();
    if (!session)
        return Error{target.describe() + ": cannot create an SSH session", {}};
    std::unique_ptr<SshSession> owner(new SshSession(target, session));
    if (common::Status set = setOptions(session, target); !set)
        return set.error();
    return owner;
}

common::Status SshSession::open()
{
    if (common::Status shaken = handshake(); !shaken)
        return shaken;
    if (common::Status known = verifyHostKey(m_session, m_target); !known)
        return known;
    {
        Bounded bounded(*this);
        common::Status accepted = authenticate(m_session, m_target);
        if (m_watchdog.fired())
            return Error{m_target.describe() + ": cannot authenticate: " + failureReason({}), {}};
        if (!accepted)
            return accepted;
    }
    keepAlive(ssh_get_fd(m_session), std::max(1L, static_cast<long>(m_target.timeoutSeconds)));
    return common::Ok{};
}

// The TCP connect and the key exchange, driven without blocking: libssh's
// blocking connect makes its socket inside and holds it until it returns, so
// neither the watchdog nor interrupt() could shut it down sooner.
common::Status SshSession::handshake()
{
    // Not the 1 s floor of other calls: a preflight of thousands of nodes
    // gives each unreachable one less.
    const auto limit = std::chrono::milliseconds(
        static_cast<long long>(std::max(0.1, m_target.timeoutSeconds) * 1000));
    // The longest a step of the exchange waits before it is tried again
    // (its writes go out when it is, not when the socket can be read).
    constexpr int kPollSliceMs = 20;
    ssh_set_blocking(m_session, 0);
    int armedOn = -1;
    int result = SSH_AGAIN;
    while (result == SSH_AGAIN && !m_watchdog.fired()) {
        result = ssh_connect(m_session);
        const int socket = ssh_get_fd(m_session);
        if (socket >= 0 && socket != armedOn) {
            m_watchdog.arm(socket, limit);
            armedOn = socket;
        }
        if (result == SSH_AGAIN) {
            pollfd readable{socket, POLLIN, 0};
            ::poll(&readable, socket >= 0 ? 1 : 0, kPollSliceMs);
        }
    }
    m_watchdog.disarm();
    ssh_set_blocking(m_session, 1);
    if (result == SSH_OK && !m_watchdog.fired())
        return common::Ok{};
    return Error{
        m_target.describe() + ": cannot connect: " + failureReason(sessionError(m_session)),
        "is the machine up, sshd listening on that port, and the address right?"};
}

SshSession::SshSession(const SshTarget& target, ssh_session_struct* session)
    : m_target(target)
    , m_session(session)
{
}

SshSession::~SshSession()
{
    for (sftp_session sftp : m_sftp)
        sftp_free(sftp);
    if (ssh_is_connected(m_session))
        ssh_disconnect(m_session);
    ssh_free(m_session);
}

void SshSession::ChannelCloser::operator()(ssh_channel_struct* channel) const
{
    ssh_channel_close(channel);
    ssh_channel_free(channel);
}

common::Result<SshSession::ShellChannel> SshSession::startShell(
    const std::string& command, const std::string& script)
{
    const std::string where = m_target.describe();
    const auto why = [this] { return failureReason(sessionError(m_session)); };
    ShellChannel channel(ssh_channel_new(m_session));
    if (!channel)
        return Error{where + ": cannot open a channel: " + why(), {}};
    if (ssh_channel_open_session(channel.get()) != SSH_OK
        || ssh_channel_request_exec(channel.get(), kPosixShell) != SSH_OK
        || !writeAll(channel.get(), script.data(), script.size()))
        return Error{where + ": cannot run '" + command + "': " + why(), {}};
    return channel;
}

common::Result<CommandResult> SshSession::run(const std::string& command, double seconds,
    const std::vector<std::pair<std::string, std::string>>& exports)
{
    const std::string where = m_target.describe();
    if (common::Status plain = onlyPrintable(where, command); !plain)
        return plain.error();
    if (common::Status names = exportableNames(where, exports); !names)
        return names.error();
    Bounded bounded(*this);
    common::Result<ShellChannel> channel = startShell(command, posixScript(command, exports));
    if (!channel)
        return channel.error();
    if (ssh_channel_send_eof(channel->get()) != SSH_OK)
        return Error{
            where + ": cannot run '" + command + "': " + failureReason(sessionError(m_session)),
            {}};
    return collect(
        channel->get(), command, seconds > 0 ? seconds : m_target.timeoutSeconds, bounded);
}

common::Result<CommandResult> SshSession::runWithInput(
    const std::string& command, const InputChunks& input)
{
    const std::string where = m_target.describe();
    if (common::Status plain = onlyPrintable(where, command); !plain)
        return plain.error();
    Bounded bounded(*this);
    common::Result<ShellChannel> shell = startShell(command, streamingScript(command));
    if (!shell)
        return shell.error();
    ssh_channel channel = shell->get();
    CommandResult result;
    const auto started = [](const CommandResult& r) {
        return afterOutputStart(r.output) != std::string::npos;
    };
    if (common::Status waited =
            readUntil(channel, command, m_target.timeoutSeconds, bounded, result, started);
        !waited)
        return waited.error();
    if (!started(result)) // the shell ended before the command ran
        return collect(channel, command, m_target.timeoutSeconds, bounded, std::move(result));
    std::vector<char> buffer(kInputChunkBytes);
    Sending sending = Sending::Sent;
    for (size_t n = input(buffer.data(), buffer.size()); n > 0 && sending == Sending::Sent;) {
        sending = sendWithinWindow(channel, buffer.data(), n, result, bounded);
        n = sending == Sending::Sent ? input(buffer.data(), buffer.size()) : 0;
    }
    if (sending == Sending::Lost
        || (sending == Sending::Sent && ssh_channel_send_eof(channel) != SSH_OK))
        return Error{where + ": lost the connection while sending to '" + command
                + "': " + failureReason(sessionError(m_session)),
            {}};
    return collect(channel, command, m_target.timeoutSeconds, bounded, std::move(result));
}

common::Status SshSession::readUntil(ssh_channel_struct* channel, const std::string& command,
    double limit, Bounded& bounded, CommandResult& result,
    const std::function<bool(const CommandResult&)>& done)
{
    const std::string where = m_target.describe();
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<long long>(limit * 1000));
    while (!ssh_channel_is_eof(channel) && !(done && done(result))) {
        bounded.progressed(); // the command's own deadline is below
        if (Clock::now() >= deadline)
            return Error{
                where + ": '" + command + "' did not finish within " + wholeSeconds(limit) + " s",
                "give more time with --ssh-timeout SECONDS"};
        const int got = readAvailable(channel, result);
        if (got == SSH_ERROR
            || (got == 0 && ssh_channel_poll_timeout(channel, 100, 0) == SSH_ERROR))
            return Error{where + ": lost the connection while running '" + command
                    + "': " + failureReason(sessionError(m_session)),
                {}};
        if (tooMuchOutput(result))
            return outputError(where, command);
    }
    return common::Ok{};
}

common::Result<CommandResult> SshSession::collect(ssh_channel_struct* channel,
    const std::string& command, double limit, Bounded& bounded, CommandResult result)
{
    if (common::Status ended = readUntil(channel, command, limit, bounded, result, {}); !ended)
        return ended.error();
    // What arrived together with the end of file.
    while (readAvailable(channel, result) > 0) {
        if (tooMuchOutput(result))
            return outputError(m_target.describe(), command);
    }
    result.exitStatus = ssh_channel_get_exit_status(channel);
    cutBeforeOutputStart(result.output);
    cutBeforeOutputStart(result.errorOutput);
    return result;
}

common::Result<sftp_session_struct*> SshSession::openSftp()
{
    const Bounded bounded(*this);
    sftp_session sftp = sftp_new(m_session);
    if (!sftp)
        return Error{m_target.describe() + ": cannot start SFTP: " + sessionError(m_session), {}};
    if (sftp_init(sftp) != SSH_OK) {
        const std::string reason = failureReason(sessionError(m_session));
        sftp_free(sftp);
        return Error{m_target.describe() + ": the SFTP subsystem did not start: " + reason,
            "is 'Subsystem sftp' enabled in the remote sshd_config?"};
    }
    return sftp;
}

common::Result<sftp_session_struct*> SshSession::sftp()
{
    if (!m_sftp.empty())
        return m_sftp.front();
    common::Result<sftp_session_struct*> opened = openSftp();
    if (opened)
        m_sftp.push_back(*opened);
    return opened;
}

common::Result<std::vector<sftp_session_struct*>> SshSession::sftpChannels(std::size_t count)
{
    if (common::Result<sftp_session_struct*> first = sftp(); !first)
        return first.error();
    while (m_sftp.size() < count) {
        common::Result<sftp_session_struct*> opened = openSftp();
        if (!opened)
            return opened.error();
        m_sftp.push_back(*opened);
    }
    return std::vector<sftp_session_struct*>(
        m_sftp.begin(), m_sftp.begin() + std::ptrdiff_t(count));
}

} // namespace tb::remote
