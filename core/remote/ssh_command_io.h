#pragma once

// How SshSession's commands travel: the script each one is sent as, its
// input, and its output read back past the shell's start-up noise.
#include "common/error.h"
#include "remote/ssh_session.h"

#include <libssh/libssh.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tb::remote::ssh_detail::command_io {

// sshd hands the exec request to the user's login shell, and fish or tcsh
// read POSIX quoting differently (fish takes \' inside '...' as an escape, so
// a quoted path could end its quote early and run what follows). Every shell
// reads the fixed words below alike; the script then reaches a POSIX sh on
// stdin, and runs with stdin from /dev/null so that nothing in it can read
// its own remaining lines.
inline constexpr const char* kPosixShell = "/bin/sh -s";

// run()'s script: the exports, then the command with stdin from /dev/null,
// after the output-start marker.
std::string posixScript(
    const std::string& command, const std::vector<std::pair<std::string, std::string>>& exports);
// runWithInput()'s script: the command after the marker, stdin left to it.
std::string streamingScript(const std::string& command);

bool writeAll(ssh_channel channel, const char* data, std::size_t size);
// Where the command's own output starts in `text`; npos before the marker.
std::size_t afterOutputStart(const std::string& text);
void cutBeforeOutputStart(std::string& text);
std::string wholeSeconds(double seconds);
// What the channel holds now, appended without waiting: bytes, or SSH_ERROR.
int readAvailable(ssh_channel channel, CommandResult& result);

common::Status onlyPrintable(const std::string& where, const std::string& command);
common::Status exportableNames(
    const std::string& where, const std::vector<std::pair<std::string, std::string>>& exports);
bool tooMuchOutput(const CommandResult& result);
common::Error outputError(const std::string& where, const std::string& command);

enum class Sending { Sent, CommandEnded, Lost };
Sending sendWithinWindow(ssh_channel channel, const char* data, std::size_t size,
    CommandResult& result, SshSession::Bounded& bounded);

} // namespace tb::remote::ssh_detail::command_io
