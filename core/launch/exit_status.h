#pragma once

#include <string>

namespace tb::launch {

// How a child process ended, from waitpid()'s status.
struct ExitStatus {
    bool signalled = false; // ended by a signal (then `signal` is set), else by exit(code)
    int code = 0;
    int signal = 0;
    bool coreDumped = false;

    static ExitStatus fromWaitStatus(int waitStatus);
    static ExitStatus exited(int code) { return {false, code, 0, false}; }
    static ExitStatus killedBy(int signal) { return {true, 0, signal, false}; }

    bool isSuccess() const { return !signalled && code == 0; }
    // "exit status 3", "signal 6 (SIGABRT, core dumped)"
    std::string toString() const;
    // The shell's convention: code, or 128 + signal.
    int shellStatus() const { return signalled ? 128 + signal : code; }
};

// "SIGTERM", or "signal 42" for one without a common name.
std::string signalName(int signal);

} // namespace tb::launch
