// What the suites that run the real tunebench-cli launch share: a config
// in a temporary folder, the launch command with the fake trainer as every
// rank (--trainer), and a launcher run to its end, signalled once its ranks
// are ready.
#pragma once

#include "../support/file_mode.h"
#include "../support/test_paths.h"

#include <QtTest>

#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cerrno>
#include <csignal>

namespace tb::test {

struct Outcome {
    int exitCode = -1; // -1: did not finish in time
    QByteArray out;
    QByteArray err;
    qint64 elapsedMs = 0;
};

inline QList<QByteArray> linesOf(const QByteArray& text)
{
    QList<QByteArray> lines = text.split('\n');
    if (!lines.isEmpty() && lines.last().isEmpty())
        lines.removeLast();
    return lines;
}

// The "X s" of the launcher's summary ("... ended in 0.004 s").
inline double summarySeconds(const QByteArray& err)
{
    const QRegularExpression pattern(QStringLiteral(" in ([0-9.]+) s"));
    const QRegularExpressionMatch match = pattern.match(QString::fromUtf8(err));
    return match.hasMatch() ? match.captured(1).toDouble() : -1.0;
}

// The pids the fake trainer printed ("pid 1234 rank 0").
inline QList<qint64> rankPids(const QByteArray& out)
{
    QList<qint64> pids;
    const QRegularExpression pattern(QStringLiteral("\\] pid (\\d+) rank"));
    auto it = pattern.globalMatch(QString::fromUtf8(out));
    while (it.hasNext())
        pids << it.next().captured(1).toLongLong();
    return pids;
}

inline bool processGone(qint64 pid)
{
    return ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
}

class LaunchCliFixture : public QObject {
protected:
    QTemporaryDir m_dir;
    QString m_config;

    QStringList launchArgs(const QStringList& options, const QStringList& trainerArgs) const
    {
        QStringList args{QStringLiteral("launch"), m_config, QStringLiteral("--trainer"),
            QString::fromUtf8(tb::test::fakeTrainerProgram())};
        args << options;
        if (!trainerArgs.isEmpty())
            args << QStringLiteral("--") << trainerArgs;
        return args;
    }

    // Runs the launcher; when `readyRanks` > 0, waits until that many ranks
    // are ready, then sends `signal` (once per entry) to the launcher.
    Outcome launch(const QStringList& args, int timeoutMs = 30000, int readyRanks = 0,
        const QList<int>& signalsToSend = {}, const QProcessEnvironment& env = {})
    {
        QProcess process;
        if (!env.isEmpty())
            process.setProcessEnvironment(env);
        QElapsedTimer timer;
        timer.start();
        process.start(QString::fromUtf8(tb::test::cliProgram()), args);
        if (!process.waitForStarted(10000))
            return {};
        if (readyRanks > 0) {
            QDir dir(m_dir.path());
            QElapsedTimer waited;
            waited.start();
            while (dir.entryList({QStringLiteral("ready.*")}, QDir::Files).size() < readyRanks
                && waited.elapsed() < 20000)
                QTest::qWait(20);
            for (const int sig : signalsToSend) {
                ::kill(pid_t(process.processId()), sig);
                QTest::qWait(50);
            }
        }
        // waitForFinished() is false for a process that already ended during qWait().
        const bool finished =
            process.waitForFinished(timeoutMs) || process.state() == QProcess::NotRunning;
        Outcome outcome;
        outcome.elapsedMs = timer.elapsed();
        if (!finished) {
            process.kill();
            process.waitForFinished();
        } else {
            outcome.exitCode =
                process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -2;
        }
        outcome.out = process.readAllStandardOutput();
        outcome.err = process.readAllStandardError();
        return outcome;
    }

    QString readyPrefix() const { return m_dir.filePath(QStringLiteral("ready")); }

    void clearReadyFiles()
    {
        QDir dir(m_dir.path());
        for (const QString& name : dir.entryList({QStringLiteral("ready.*")}, QDir::Files))
            dir.remove(name);
    }

    // The config every launch names (the fake trainer reads none of it).
    bool writeConfig()
    {
        if (!m_dir.isValid())
            return false;
        m_config = m_dir.filePath(QStringLiteral("run.yaml"));
        QFile file(m_config);
        return file.open(QIODevice::WriteOnly)
            && file.write("model: ./model\ndata:\n  train: train.jsonl\n") > 0;
    }
};

} // namespace tb::test
