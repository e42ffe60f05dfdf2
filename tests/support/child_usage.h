#pragma once

// A program run as a child of the test with what it cost: its exit status
// and its peak resident memory (wait4's ru_maxrss, the child alone, not the
// test). Its stdout goes to /dev/null (a flood of lines costs the test
// nothing), its stderr to a file that comes back as text.
#include <QFile>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace tb::test {

struct MeasuredRun {
    int exitCode = -1; // -1: killed by a signal, or not started
    long maxRssKib = 0;
    QString err; // its stderr, or why it did not run
    bool timedOut = false;
};

// Runs `program` with `arguments`; a child still running after
// `timeoutSeconds` is killed (timedOut). Waits on a pidfd, no polling loop.
inline MeasuredRun runMeasured(
    const QString& program, const QStringList& arguments, int timeoutSeconds = 120)
{
    MeasuredRun run;
    QTemporaryDir dir;
    const std::string errPath = dir.filePath(QStringLiteral("stderr")).toStdString();
    std::vector<std::string> words{program.toStdString()};
    for (const QString& argument : arguments)
        words.push_back(argument.toStdString());
    std::vector<char*> argv;
    for (std::string& word : words)
        argv.push_back(word.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(
        &actions, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
        run.err = QStringLiteral("cannot start %1: %2")
                      .arg(program, QString::fromLocal8Bit(strerror(spawned)));
        return run;
    }
    const int pidfd = int(::syscall(SYS_pidfd_open, pid, 0));
    pollfd ended{pidfd, POLLIN, 0};
    if (pidfd >= 0 && ::poll(&ended, 1, timeoutSeconds * 1000) == 0) {
        ::kill(pid, SIGKILL);
        run.timedOut = true;
    }
    if (pidfd >= 0)
        ::close(pidfd);
    int status = 0;
    rusage usage{};
    ::wait4(pid, &status, 0, &usage);
    run.maxRssKib = usage.ru_maxrss;
    run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    QFile err(QString::fromStdString(errPath));
    if (err.open(QIODevice::ReadOnly))
        run.err = QString::fromUtf8(err.readAll());
    return run;
}

} // namespace tb::test
