#pragma once

#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

// Runs tests/reference/hf_reference.py with the reference environment's
// Python (TB_REFERENCE_PYTHON, chosen at configure time), offline.
namespace tb::reference {

struct ProcessOutcome {
    bool ok = false;
    QString problem; // what failed, with the command and its stderr
};

inline ProcessOutcome runPython(const QStringList& arguments, int timeoutMs = 300000)
{
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("HF_HUB_OFFLINE", "1");
    environment.insert("TRANSFORMERS_OFFLINE", "1");
    environment.insert("HF_DATASETS_OFFLINE", "1");
    environment.insert("TOKENIZERS_PARALLELISM", "false");
    process.setProcessEnvironment(environment);
    const QString python = QStringLiteral(TB_REFERENCE_PYTHON);
    process.start(python, arguments);
    const QString command = python + " " + arguments.join(' ');
    if (!process.waitForStarted())
        return {false, command + ": cannot start: " + process.errorString()};
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        return {false, command + ": still running after " + QString::number(timeoutMs) + " ms"};
    }
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0)
        return {false,
            command + ": exit " + QString::number(process.exitCode()) + "\n"
                + QString::fromUtf8(process.readAllStandardError()).right(4000)};
    return {true, {}};
}

inline ProcessOutcome runReference(const QString& command, const QStringList& arguments)
{
    return runPython(
        QStringList{QStringLiteral(TB_SOURCE_DIR "/tests/reference/hf_reference.py"), command}
        + arguments);
}

} // namespace tb::reference
