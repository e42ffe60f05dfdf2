#pragma once

// tunebench-cli run as a user runs it: a real process, its exit status and
// both output streams, for the suites that test subcommands end to end.
#include <QProcess>
#include <QString>
#include <QStringList>

namespace tb::test {

struct CliOutcome {
    int exitCode = -1; // -1: it crashed or ran past the timeout (then killed)
    QString out;
    QString err;
};

inline CliOutcome runProgram(
    const QString& program, const QStringList& arguments, int timeoutMs = 30000)
{
    QProcess process;
    process.start(program, arguments);
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        return {};
    }
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
        QString::fromUtf8(process.readAllStandardOutput()),
        QString::fromUtf8(process.readAllStandardError())};
}

} // namespace tb::test
