#pragma once

#include "common/error.h"
#include "launch/exit_status.h"

#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tb::launch {

struct SpawnRequest {
    std::string program; // a path, or a name looked up in PATH
    std::vector<std::string> arguments; // argv[1..]
    std::vector<std::string> environment; // "NAME=value", the child's whole environment
};

// One child process with its stdout and stderr on pipes. The child leads its
// own process group (signals reach what it starts too, and the terminal's
// Ctrl-C reaches only the launcher, which forwards it once), reads /dev/null
// as stdin, starts with default signal dispositions and an empty mask, and
// on Linux is killed if the launcher dies. Destroying a ChildProcess that is
// still running kills its group and reaps it: no zombie, no leaked fd.
class ChildProcess {
public:
    // Fails (naming the program and the reason) when it cannot be executed;
    // the exec error comes back through a close-on-exec pipe.
    static common::Result<std::unique_ptr<ChildProcess>> spawn(const SpawnRequest& request);

    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return m_pid; }
    int stdoutFd() const { return m_stdoutFd; }
    int stderrFd() const { return m_stderrFd; }
    void closeStdout();
    void closeStderr();

    bool isRunning() const { return !m_status.has_value(); }
    const std::optional<ExitStatus>& status() const { return m_status; }

    // Sends `signal` to the child's process group; false once it is reaped.
    bool signalGroup(int signal);
    // waitpid without blocking: the status once it has ended.
    std::optional<ExitStatus> tryReap();

private:
    ChildProcess(pid_t pid, int stdoutFd, int stderrFd);

    pid_t m_pid = -1;
    int m_stdoutFd = -1;
    int m_stderrFd = -1;
    std::optional<ExitStatus> m_status;
};

} // namespace tb::launch
