#pragma once

// tunebench-cli run as a user runs it: a real process, its exit status and
// both output streams, for the suites that test subcommands end to end.
#include <QByteArray>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace tb::test {

struct CliOutcome {
    int exitCode = -1; // -1: it crashed, or ran past the timeout and was killed
    QString out;
    QString err; // "timed out" first when it ran past the timeout
};

// What a run may be given beyond its arguments.
struct ProgramSetup {
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    QString workingDirectory; // empty: the test's own
    QByteArray input; // written to its stdin, which is then closed
};

inline CliOutcome runProgram(const QString& program, const QStringList& arguments,
    int timeoutMs = 30000, const ProgramSetup& setup = {})
{
    QProcess process;
    process.setProcessEnvironment(setup.environment);
    if (!setup.workingDirectory.isEmpty())
        process.setWorkingDirectory(setup.workingDirectory);
    process.start(program, arguments);
    if (!setup.input.isEmpty())
        process.write(setup.input);
    process.closeWriteChannel();
    CliOutcome outcome;
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        outcome.err = QStringLiteral("timed out\n");
    }
    outcome.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    outcome.out = QString::fromUtf8(process.readAllStandardOutput());
    outcome.err += QString::fromUtf8(process.readAllStandardError());
    return outcome;
}

} // namespace tb::test
