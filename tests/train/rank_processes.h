#pragma once

#include <QElapsedTimer>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

// Running several tunebench-cli processes at once (the ranks of a job, or
// one process) and reporting how each ended, for the trainer's multi-process
// tests.
namespace tb::testutil {

inline const char* const kRankVariables[] = {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE",
    "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK"};

// This process's environment without torchrun's variables: a single process
// stays single even when the suite itself runs under a launcher.
inline QProcessEnvironment plainEnvironment()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const char* name : kRankVariables)
        environment.remove(name);
    return environment;
}

struct Command {
    QStringList arguments;
    QProcessEnvironment environment = plainEnvironment();
};

struct Ended {
    bool finished = false; // false: still running at the deadline, then killed
    bool crashed = false; // ended by a signal
    int exitCode = -1;
    double seconds = 0.0;
    QString out;
    QString err;

    bool succeeded() const { return finished && !crashed && exitCode == 0; }
};

// Starts every command at once and waits for all of them, polling so that
// each one's end time is its own.
inline std::vector<Ended> runTogether(
    const QString& program, const std::vector<Command>& commands, int timeoutMs = 180000)
{
    std::vector<std::unique_ptr<QProcess>> processes;
    std::vector<Ended> ended(commands.size());
    QElapsedTimer clock;
    clock.start();
    for (const Command& command : commands) {
        auto process = std::make_unique<QProcess>();
        process->setProcessEnvironment(command.environment);
        process->start(program, command.arguments);
        process->waitForStarted(10000);
        processes.push_back(std::move(process));
    }
    bool running = true;
    while (running && clock.elapsed() < timeoutMs) {
        running = false;
        for (std::size_t i = 0; i < processes.size(); ++i) {
            if (ended[i].finished)
                continue;
            if (processes[i]->state() != QProcess::NotRunning
                && !processes[i]->waitForFinished(20)) {
                running = true;
                continue;
            }
            ended[i].finished = true;
            ended[i].seconds = static_cast<double>(clock.elapsed()) / 1000.0;
        }
    }
    for (std::size_t i = 0; i < processes.size(); ++i) {
        QProcess& process = *processes[i];
        if (!ended[i].finished) {
            ended[i].seconds = static_cast<double>(clock.elapsed()) / 1000.0; // when it was killed
            process.kill();
            process.waitForFinished(10000);
        }
        ended[i].crashed = process.exitStatus() == QProcess::CrashExit;
        ended[i].exitCode = process.exitCode();
        ended[i].out = QString::fromUtf8(process.readAllStandardOutput());
        ended[i].err = QString::fromUtf8(process.readAllStandardError());
    }
    return ended;
}

inline Ended runOne(const QString& program, const Command& command)
{
    return runTogether(program, {command}).front();
}

// Each failed process: how it ended and the end of its stderr.
inline QString describe(const std::vector<Ended>& ended)
{
    QString text;
    for (std::size_t i = 0; i < ended.size(); ++i) {
        if (ended[i].succeeded())
            continue;
        text +=
            QString("process %1: %2exit %3 after %4 s:\n%5\n")
                .arg(i)
                .arg(ended[i].finished ? (ended[i].crashed ? "crashed, " : "") : "HUNG, killed, ")
                .arg(ended[i].exitCode)
                .arg(ended[i].seconds, 0, 'f', 1)
                .arg(ended[i].err.right(3000));
    }
    return text;
}

inline bool allSucceeded(const std::vector<Ended>& ended)
{
    for (const Ended& one : ended) {
        if (!one.succeeded())
            return false;
    }
    return !ended.empty();
}

} // namespace tb::testutil
