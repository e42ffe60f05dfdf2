#include "launch/child_process.h"

#include "common/text.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace tb::launch {

namespace {

void closeFd(int& fd)
{
    if (fd >= 0)
        close(fd);
    fd = -1;
}

// Both ends close-on-exec, so no rank inherits another rank's pipes.
struct Pipe {
    int readFd = -1;
    int writeFd = -1;
    ~Pipe()
    {
        closeFd(readFd);
        closeFd(writeFd);
    }
    bool open()
    {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0)
            return false;
        readFd = fds[0];
        writeFd = fds[1];
        return true;
    }
};

bool isExecutableFile(const std::string& path)
{
    struct stat info { };
    return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode)
        && access(path.c_str(), X_OK) == 0;
}

// execvpe() searches PATH after fork, where only async-signal-safe calls
// belong; so the search happens here, before.
std::string resolveProgram(const std::string& program, const std::vector<std::string>& environment)
{
    if (program.find('/') != std::string::npos)
        return program;
    std::string path = "/usr/local/bin:/usr/bin:/bin";
    for (const std::string& entry : environment) {
        if (entry.rfind("PATH=", 0) == 0)
            path = entry.substr(5);
    }
    for (const std::string& dir : common::split(path, ':')) {
        const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
        if (isExecutableFile(candidate))
            return candidate;
    }
    return program;
}

// Descriptors the launcher inherited without close-on-exec (a terminal
// multiplexer's, a CI runner's) must not reach the ranks: close all but
// 0, 1, 2 and `keep`.
void closeInheritedFds(int keep, long openMax)
{
    const unsigned last = ~0U;
#ifdef SYS_close_range
    const bool below = keep <= 3 || syscall(SYS_close_range, 3U, unsigned(keep - 1), 0U) == 0;
    if (below && syscall(SYS_close_range, unsigned(keep + 1), last, 0U) == 0)
        return;
#endif
    for (int fd = 3; fd < (openMax > 0 && openMax < 65536 ? int(openMax) : 65536); ++fd) {
        if (fd != keep)
            close(fd);
    }
    (void)last;
}

// Between fork and exec: only async-signal-safe calls, no allocation.
[[noreturn]] void execChild(const char* path, char* const* argv, char* const* envp, int stdoutFd,
    int stderrFd, int reportFd, pid_t parent, long openMax)
{
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL); // ignored signals (SIGPIPE) would otherwise stay ignored
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) // the launcher died before prctl took effect
        _exit(127);
#else
    (void)parent;
#endif
    const int devNull = open("/dev/null", O_RDONLY);
    if (devNull >= 0 && devNull != STDIN_FILENO) {
        dup2(devNull, STDIN_FILENO);
        close(devNull);
    }
    if (dup2(stdoutFd, STDOUT_FILENO) < 0 || dup2(stderrFd, STDERR_FILENO) < 0) {
        const int error = errno;
        [[maybe_unused]] const ssize_t written = write(reportFd, &error, sizeof error);
        _exit(127);
    }
    closeInheritedFds(reportFd, openMax);
    execve(path, argv, envp);
    const int error = errno;
    [[maybe_unused]] const ssize_t written = write(reportFd, &error, sizeof error);
    _exit(127);
}

} // namespace

ChildProcess::ChildProcess(pid_t pid, int stdoutFd, int stderrFd)
    : m_pid(pid)
    , m_stdoutFd(stdoutFd)
    , m_stderrFd(stderrFd)
{
}

ChildProcess::~ChildProcess()
{
    closeStdout();
    closeStderr();
    if (isRunning()) {
        signalGroup(SIGKILL);
        int status = 0;
        while (waitpid(m_pid, &status, 0) < 0 && errno == EINTR) { }
    }
}

common::Result<std::unique_ptr<ChildProcess>> ChildProcess::spawn(const SpawnRequest& request)
{
    const std::string path = resolveProgram(request.program, request.environment);
    std::vector<std::string> argvText{request.program};
    argvText.insert(argvText.end(), request.arguments.begin(), request.arguments.end());
    std::vector<char*> argv;
    for (std::string& arg : argvText)
        argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<std::string> envText = request.environment;
    std::vector<char*> envp;
    for (std::string& entry : envText)
        envp.push_back(entry.data());
    envp.push_back(nullptr);

    Pipe out, err, report;
    if (!out.open() || !err.open() || !report.open())
        return common::Error{
            "cannot create pipes for '" + request.program + "': " + std::strerror(errno), {}};

    // Signals stay blocked across fork so the child never runs our handlers.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    const pid_t parent = getpid();
    const long openMax = sysconf(_SC_OPEN_MAX); // not async-signal-safe: asked before fork
    const pid_t pid = fork();
    if (pid == 0)
        execChild(path.c_str(), argv.data(), envp.data(), out.writeFd, err.writeFd, report.writeFd,
            parent, openMax);
    const int forkError = errno;
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (pid < 0)
        return common::Error{
            "cannot start '" + request.program + "': fork: " + std::strerror(forkError), {}};
    setpgid(pid, pid); // also here, so signalGroup() works before the child runs
    closeFd(out.writeFd);
    closeFd(err.writeFd);
    closeFd(report.writeFd);

    int execError = 0;
    ssize_t got = 0;
    do {
        got = read(report.readFd, &execError, sizeof execError);
    } while (got < 0 && errno == EINTR);
    if (got == ssize_t(sizeof execError)) {
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) { }
        return common::Error{
            "cannot start '" + request.program + "' (" + path + "): " + std::strerror(execError),
            "give the path of an executable"};
    }
    auto child = std::unique_ptr<ChildProcess>(new ChildProcess(pid, out.readFd, err.readFd));
    out.readFd = -1;
    err.readFd = -1;
    return child;
}

void ChildProcess::closeStdout()
{
    closeFd(m_stdoutFd);
}

void ChildProcess::closeStderr()
{
    closeFd(m_stderrFd);
}

bool ChildProcess::signalGroup(int signal)
{
    if (!isRunning())
        return false;
    // The group may not exist yet or any more; the child itself still may.
    if (kill(-m_pid, signal) != 0)
        kill(m_pid, signal);
    return true;
}

std::optional<ExitStatus> ChildProcess::tryReap()
{
    if (m_status)
        return m_status;
    int status = 0;
    pid_t done = 0;
    do {
        done = waitpid(m_pid, &status, WNOHANG);
    } while (done < 0 && errno == EINTR);
    if (done == m_pid)
        m_status = ExitStatus::fromWaitStatus(status);
    else if (done < 0 && errno == ECHILD)
        m_status = ExitStatus::killedBy(0); // reaped elsewhere: nothing left to wait for
    return m_status;
}

} // namespace tb::launch
