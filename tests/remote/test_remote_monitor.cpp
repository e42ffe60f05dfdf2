// `tunebench-cli monitor` against a real OpenSSH sshd on loopback: a run's
// events printed once and from an offset, here and over SSH, its argument
// errors, and a real run followed and stopped over SSH.
#include "../support/endless_run.h"
#include "../support/event_lines.h"
#include "remote_cli.h"

#include <QtTest>

using tb::test::appendLine;
using tb::test::CliRun;
using tb::test::runCli;
using tb::test::stepLine;

class TestRemoteMonitor : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        const QString failure = m_server.start();
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        QVERIFY(m_work.isValid());
    }

    void monitorCommandOnce()
    {
        const QString run = m_work.filePath(QStringLiteral("once"));
        QVERIFY(QDir().mkpath(run));
        appendLine(run + "/events.jsonl", tb::test::remoteRunStartEvent());
        appendLine(run + "/events.jsonl", stepLine(1, 1500.0));
        appendLine(run + "/events.jsonl", stepLine(2, 1500.0));
        for (const bool overSsh : {false, true}) {
            QStringList arguments{QStringLiteral("monitor"), run, QStringLiteral("--once")};
            if (overSsh)
                arguments << tb::test::cliSshArguments(m_server);
            const CliRun result = runCli(arguments);
            QVERIFY2(result.exitCode == 0, qPrintable(result.err));
            QVERIFY2(result.out.contains(QStringLiteral("run_start  remote-demo on somewhere")),
                qPrintable(result.out));
            QVERIFY2(result.out.contains(QStringLiteral("step 2/4  loss 2.8000  1.5 k tokens/s")),
                qPrintable(result.out));
        }
    }

    // Going on from an offset prints only what follows it, and still knows
    // the run's total from its run_start at the top of the file.
    void monitorCommandGoesOnFromAnOffset()
    {
        const QString run = m_work.filePath(QStringLiteral("offset"));
        QVERIFY(QDir().mkpath(run));
        appendLine(run + "/events.jsonl", tb::test::remoteRunStartEvent());
        appendLine(run + "/events.jsonl", stepLine(1, 1500.0));
        const qint64 offset = QFileInfo(run + "/events.jsonl").size();
        appendLine(run + "/events.jsonl", stepLine(2, 1500.0));
        for (const bool overSsh : {false, true}) {
            QStringList arguments{QStringLiteral("monitor"), run, QStringLiteral("--once"),
                QStringLiteral("--from-offset"), QString::number(offset),
                QStringLiteral("--from-line"), QStringLiteral("3")};
            if (overSsh)
                arguments << tb::test::cliSshArguments(m_server);
            const CliRun result = runCli(arguments);
            QVERIFY2(result.exitCode == 0, qPrintable(result.err));
            QVERIFY2(!result.out.contains(QStringLiteral("run_start"))
                    && !result.out.contains(QStringLiteral("step 1/")),
                qPrintable(result.out));
            QVERIFY2(result.out.contains(QStringLiteral("step 2/4  loss 2.8000")),
                qPrintable(result.out));
        }
    }

    void monitorCommandBadInput_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("expected");
        QTest::newRow("two folders")
            << QStringList{"a", "b"} << "expected one run folder or --run ID";
        QTest::newRow("folder and --run")
            << QStringList{"a", "--run", "x"} << "expected one run folder or --run ID";
        QTest::newRow("offset not a number")
            << QStringList{"run", "--from-offset", "x"} << "--from-offset";
        QTest::newRow("remote-cli without host")
            << QStringList{"--remote-cli", "/x"} << "--remote-cli needs --host";
        QTest::newRow("port without host")
            << QStringList{"run", "--port", "22"} << "--port needs --host";
        QTest::newRow("bad host") << QStringList{"run", "--host", "user@"}
                                  << "expected [USER@]HOST";
        QTest::newRow("a user a ProxyCommand's shell would read") << QStringList{
            "run", "--host", "$(touch x)@h"} << "user '$(touch x)': expected letters, digits";
        QTest::newRow("an option for a user")
            << QStringList{"run", "--host", "-x@h"} << "a user name does not start with '-'";
        QTest::newRow("bad port") << QStringList{"run", "--host", "h", "--port", "0"} << "--port";
        QTest::newRow("bad poll") << QStringList{"run", "--poll", "0"} << "--poll";
    }

    void monitorCommandBadInput()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, expected);
        const CliRun result = runCli(QStringList{QStringLiteral("monitor")} + arguments);
        QCOMPARE(result.exitCode, 2);
        QVERIFY2(result.err.contains(expected), qPrintable(result.err));
    }

    // A run started here, followed and stopped over SSH as from another machine.
    void monitorStopsARunOverSsh()
    {
        if (const QString why = tb::test::whyNoEndlessRun(); !why.isEmpty())
            TB_SKIP(why);
        const QString runDir = m_work.filePath(QStringLiteral("ssh-run"));
        const QString config = m_work.filePath(QStringLiteral("ssh-run.yaml"));
        QVERIFY(tb::test::writeEndlessRunConfig(config, runDir));
        QProcess trainer;
        QVERIFY(tb::test::startTrainer(trainer, config));
        const qint64 pid = trainer.processId();
        // Stop once it has trained a few steps.
        QTRY_VERIFY_WITH_TIMEOUT(QFile(runDir + "/events.jsonl").size() > 2000, 60000);

        const CliRun result =
            runCli(QStringList{QStringLiteral("monitor"), runDir, QStringLiteral("--stop"),
                       QStringLiteral("--poll"), QStringLiteral("0.2")}
                + tb::test::cliSshArguments(m_server));
        QVERIFY2(result.exitCode == 0, qPrintable(result.err + result.out));
        QVERIFY2(
            result.out.contains(QStringLiteral("stop       SIGTERM sent to process %1").arg(pid)),
            qPrintable(result.out));
        QVERIFY2(result.out.contains(QStringLiteral("run_end    stopped")), qPrintable(result.out));
        QVERIFY(trainer.waitForFinished(30000));
        const QStringList lines = result.out.split('\n');
        qInfo("monitor over SSH printed %lld lines and stopped pid %lld",
            static_cast<long long>(lines.size()), static_cast<long long>(pid));

        // Ended: a second stop is refused with the reason.
        const CliRun again =
            runCli(QStringList{QStringLiteral("monitor"), runDir, QStringLiteral("--stop")}
                + tb::test::cliSshArguments(m_server));
        QCOMPARE(again.exitCode, 0); // the run's own end status: stopped
        QVERIFY(again.out.contains(QStringLiteral("run_end    stopped")));
        QVERIFY(!again.out.contains(QStringLiteral("SIGTERM sent")));
        QVERIFY2(again.err.contains(
                     QStringLiteral("nothing to stop, the run had already ended (stopped)")),
            qPrintable(again.err));
    }

private:
    tb::test::SshdServer m_server;
    QTemporaryDir m_work;
};

QTEST_GUILESS_MAIN(TestRemoteMonitor)
#include "test_remote_monitor.moc"
