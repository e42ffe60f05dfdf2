#include "remote/ssh_command_io.h"

#include "common/text.h"
#include "launch/text_quote.h"

#include <poll.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace tb::remote::ssh_detail::command_io {

using common::Error;

namespace {

// Printed on stdout and stderr before the command runs: whatever the remote
// shell's start-up files print first (an `echo Welcome` in ~/.bashrc, which
// bash reads for SSH commands too) comes before it and is cut off, so JSON,
// hashes and error lines are read from the command alone.
const std::string kOutputStart = "--- tunebench output ---";

std::string withOutputStart(const std::string& command)
{
    const std::string mark = "printf '%s\\n' '" + kOutputStart + "'";
    return mark + "; " + mark + " >&2; " + command;
}

} // namespace

std::string posixScript(
    const std::string& command, const std::vector<std::pair<std::string, std::string>>& exports)
{
    std::string script;
    for (const auto& [name, value] : exports)
        script += name + "=" + launch::shellQuote(value) + "; export " + name + "\n";
    return script + "{ " + withOutputStart(command) + "\n} </dev/null\n";
}

// The script of runWithInput(): one line, no redirection of stdin, so
// that what reaches stdin after the line is the command's. dash reads its
// script in blocks, not a line at a time, so the input is sent only once the
// line runs (its output start is seen): the shell has read all there was,
// the line, and the command reads the rest.
std::string streamingScript(const std::string& command)
{
    return withOutputStart(command) + "\n";
}

bool writeAll(ssh_channel channel, const char* data, size_t size)
{
    for (size_t sent = 0; sent < size;) {
        const int n = ssh_channel_write(channel, data + sent, uint32_t(size - sent));
        if (n <= 0)
            return false;
        sent += size_t(n);
    }
    return true;
}

// Where the output after the first line that is kOutputStart begins; npos
// when there is no such line (yet, or the shell failed before it).
size_t afterOutputStart(const std::string& text)
{
    const std::string line = kOutputStart + "\n";
    if (text.starts_with(line))
        return line.size();
    const size_t newline = text.find("\n" + line);
    return newline == std::string::npos ? newline : newline + 1 + line.size();
}

// What follows the first line that is kOutputStart; all of `text` when there
// is none.
void cutBeforeOutputStart(std::string& text)
{
    if (const size_t start = afterOutputStart(text); start != std::string::npos)
        text.erase(0, start);
}

// "20" for 19.4: a deadline as people read it, never below what was waited.
std::string wholeSeconds(double seconds)
{
    return std::to_string(static_cast<long long>(std::ceil(seconds)));
}

// Appends what the channel holds now on stdout and stderr, without waiting:
// the bytes read, or SSH_ERROR.
int readAvailable(ssh_channel channel, CommandResult& result)
{
    char buffer[65536];
    int total = 0;
    for (const int isStderr : {0, 1}) {
        const int n = ssh_channel_read_nonblocking(channel, buffer, sizeof buffer, isStderr);
        if (n == SSH_ERROR)
            return SSH_ERROR;
        if (n > 0) {
            (isStderr ? result.errorOutput : result.output).append(buffer, std::size_t(n));
            total += n;
        }
    }
    return total;
}

// A command holding NUL or another control character is not sent: NUL cuts
// the exec request short, and csh and tcsh end a command at a newline even
// inside quotes. Our own commands hold none, so
// one that does carries a path or an id that does (a YAML "\n" or "\0").
common::Status onlyPrintable(const std::string& where, const std::string& command)
{
    const auto bad = std::find_if(command.begin(), command.end(), common::isControlCharacter);
    if (bad == command.end())
        return common::Ok{};
    return Error{where + ": refusing to run '" + common::escapeControl(command)
            + "': it holds the control character " + common::escapeControl(std::string(1, *bad))
            + " at byte " + std::to_string(bad - command.begin())
            + ", which a remote shell may not read as written",
        "rename the file or folder (or give another path) without control characters"};
}

// Names a POSIX shell takes as a variable, values without control
// characters: our own (a run secret), so a bad one is a bug of ours, and it
// is named without its value.
common::Status exportableNames(
    const std::string& where, const std::vector<std::pair<std::string, std::string>>& exports)
{
    for (const auto& [name, value] : exports) {
        const bool nameOk = !name.empty() && !std::isdigit(static_cast<unsigned char>(name.front()))
            && std::all_of(name.begin(), name.end(),
                [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
        const bool valueOk = std::none_of(value.begin(), value.end(), common::isControlCharacter);
        if (!nameOk || !valueOk)
            return Error{where + ": refusing to export '" + common::escapeControl(name) + "': "
                    + (nameOk ? "its value holds a control character"
                              : "not a shell variable name"),
                {}};
    }
    return common::Ok{};
}

bool tooMuchOutput(const CommandResult& result)
{
    return result.output.size() + result.errorOutput.size() > kMaxCommandOutputBytes;
}

// Sends `data` as the channel's window lets it go, never blocking on a full
// window: while it waits it reads what the command prints, so a command that
// ends before it has read everything (a folder it cannot write) is seen as
// ended, where a blocking write would wait for room that never comes.
Sending sendWithinWindow(ssh_channel channel, const char* data, size_t size, CommandResult& result,
    SshSession::Bounded& bounded)
{
    for (size_t sent = 0; sent < size;) {
        if (ssh_channel_is_eof(channel) || ssh_channel_is_closed(channel) || tooMuchOutput(result))
            return Sending::CommandEnded;
        const uint32_t window = ssh_channel_window_size(channel);
        if (window == 0) {
            pollfd readable{ssh_get_fd(ssh_channel_get_session(channel)), POLLIN, 0};
            ::poll(&readable, 1, 100);
            if (readAvailable(channel, result) == SSH_ERROR)
                return Sending::Lost;
            continue;
        }
        const int n = ssh_channel_write(
            channel, data + sent, uint32_t(std::min<size_t>(window, size - sent)));
        // A refused write on a live connection is the command's channel
        // closing (libssh refuses once the peer's close has arrived, even
        // with its last output still unread): the command ended.
        if (n == SSH_ERROR)
            return ssh_is_connected(ssh_channel_get_session(channel)) ? Sending::CommandEnded
                                                                      : Sending::Lost;
        sent += size_t(n);
        bounded.progressed();
    }
    return Sending::Sent;
}

Error outputError(const std::string& where, const std::string& command)
{
    return Error{where + ": '" + command + "' printed more than "
            + std::to_string(kMaxCommandOutputBytes >> 20) + " MiB; stopped reading it",
        "a command's answer is expected to be small: is the remote tunebench-cli (or the shell "
        "there) printing something else?"};
}

} // namespace tb::remote::ssh_detail::command_io
