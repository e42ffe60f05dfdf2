#include "detached_launch.h"

#include "common/atomic_file.h"
#include "common/local_machine.h"

#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>

namespace tb::cli {

namespace {

// In the child: a session of its own, stdin from /dev/null, output to the log.
std::string leaveTerminal(const std::string& logPath)
{
    if (::setsid() < 0)
        return std::string("setsid: ") + std::strerror(errno);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    // Private as the registry (the ranks' output may name data and paths);
    // O_NOFOLLOW: a link planted where the log goes is refused, not written through.
    const int log =
        ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (null < 0 || log < 0 || ::fchmod(log, 0600) != 0)
        return "cannot open the log '" + logPath + "': " + std::strerror(errno);
    ::dup2(null, STDIN_FILENO);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::close(null);
    ::close(log);
    return {};
}

void ignoreStopSignals()
{
    struct sigaction ignore { };
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP})
        sigaction(signal, &ignore, nullptr);
}

[[noreturn]] void runChild(launch::RegistryEntry entry, const std::string& entryPath, int reply,
    const std::function<LaunchEnd()>& supervise)
{
    entry.pid = ::getpid();
    entry.host = common::hostName();
    entry.startedAt = launch::utcNow();
    std::string failure = leaveTerminal(entry.log);
    if (failure.empty()) {
        if (common::Status written = launch::writeRegistryEntry(entryPath, entry); !written)
            failure = written.error().toString();
    }
    const std::string answer =
        failure.empty() ? "ok " + launch::registryEntryToJson(entry) : "error " + failure;
    common::writeAll(reply, answer.data(), answer.size()); // the parent reads whatever came
    ::close(reply);
    if (!failure.empty())
        ::_exit(2);
    // supervise() installs the stop handlers for the ranks' lifetime and
    // puts back these when they have ended: a stop that arrives then (a
    // supervisor's SIGTERM sent as the ranks were ending on their own) is
    // moot and must not kill this process before it records the end.
    ignoreStopSignals();
    const LaunchEnd end = supervise();
    entry.state = "exited";
    entry.exitCode = end.exitStatus;
    entry.summary = end.summary;
    entry.stoppedOnRequest = end.stoppedOnRequest;
    entry.endedAt = launch::utcNow();
    if (common::Status written = launch::writeRegistryEntry(entryPath, entry); !written)
        std::fprintf(stderr, "tunebench-cli launch: %s\n", written.error().toString().c_str());
    std::fflush(nullptr);
    ::_exit(end.exitStatus);
}

} // namespace

int detachAndSupervise(launch::RegistryEntry entry, const std::string& entryPath,
    const std::function<LaunchEnd()>& supervise)
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        std::cerr << "launch --detach: pipe: " << std::strerror(errno) << "\n";
        return 2;
    }
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0) {
        std::cerr << "launch --detach: fork: " << std::strerror(errno) << "\n";
        return 2;
    }
    if (child == 0) {
        ::close(fds[0]);
        runChild(std::move(entry), entryPath, fds[1], supervise);
    }
    ::close(fds[1]);
    std::string reply;
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            reply.append(buffer, size_t(n));
    ::close(fds[0]);
    if (reply.starts_with("ok ")) {
        std::printf("%s\n", reply.c_str() + 3);
        return 0;
    }
    std::cerr << "tunebench-cli launch --detach: "
              << (reply.empty() ? std::string("the detached launcher died before starting")
                                : reply.substr(6))
              << "\n";
    ::waitpid(child, nullptr, WNOHANG);
    return 2;
}

} // namespace tb::cli
