#include "launch/exit_status.h"

#include <csignal>
#include <sys/wait.h>

namespace tb::launch {

ExitStatus ExitStatus::fromWaitStatus(int waitStatus)
{
    if (WIFSIGNALED(waitStatus)) {
        ExitStatus status = killedBy(WTERMSIG(waitStatus));
#ifdef WCOREDUMP
        status.coreDumped = WCOREDUMP(waitStatus);
#endif
        return status;
    }
    return exited(WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : 0);
}

std::string ExitStatus::toString() const
{
    if (!signalled)
        return "exit status " + std::to_string(code);
    std::string text = "signal " + std::to_string(signal) + " (" + signalName(signal);
    if (coreDumped)
        text += ", core dumped";
    return text + ")";
}

std::string signalName(int signal)
{
    // The signals a rank realistically dies of; strsignal() is neither
    // thread-safe nor stable in wording across libcs.
    static constexpr struct {
        int number;
        const char* name;
    } kNames[] = {
        {SIGHUP, "SIGHUP"},
        {SIGINT, "SIGINT"},
        {SIGQUIT, "SIGQUIT"},
        {SIGILL, "SIGILL"},
        {SIGTRAP, "SIGTRAP"},
        {SIGABRT, "SIGABRT"},
        {SIGBUS, "SIGBUS"},
        {SIGFPE, "SIGFPE"},
        {SIGKILL, "SIGKILL"},
        {SIGUSR1, "SIGUSR1"},
        {SIGSEGV, "SIGSEGV"},
        {SIGUSR2, "SIGUSR2"},
        {SIGPIPE, "SIGPIPE"},
        {SIGALRM, "SIGALRM"},
        {SIGTERM, "SIGTERM"},
        {SIGXCPU, "SIGXCPU"},
        {SIGXFSZ, "SIGXFSZ"},
    };
    for (const auto& entry : kNames) {
        if (entry.number == signal)
            return entry.name;
    }
    return "signal " + std::to_string(signal);
}

} // namespace tb::launch
