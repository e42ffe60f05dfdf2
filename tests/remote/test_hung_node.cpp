// A multi-node launch whose node 0 stops answering SFTP, as when the file
// system under its run folder hangs (review H3): the sftp-server under way
// there is stopped with SIGSTOP, and every SFTP session started there later
// stops itself the same way. The launch reads rank 0's events over a
// connection and a thread of their own, so a stop asked for (Ctrl-C;
// SIGTERM, which the GUI's Stop sends; `launch --stop` from another CLI)
// reaches every node within 5 s and the launch ends within the grace + 15 s;
// SIGHUP (a closed terminal, or the GUI's window closing) detaches within 5 s
// with the run going on; and a node that dies is named within 20 s.
#include "../support/cli_outcome.h"
#include "multi_node_checks.h"
#include "namespace_launch.h"

#include "launch/run_registry.h"

#include <QElapsedTimer>
#include <QFile>
#include <QtTest>

#include <csignal>

using tb::test::CliOutcome;

namespace {

constexpr double kGrace = 15; // Cluster::launchArguments' --grace
constexpr double kNoticeBound = 5;

// Seconds until `process`'s stderr holds `text` (what it read is added to
// `err`), or -1 when it does not within `bound` seconds.
double secondsUntil(QProcess& process, QString& err, const QString& text, double bound)
{
    QElapsedTimer clock;
    clock.start();
    while (!err.contains(text)) {
        if (clock.elapsed() > bound * 1000)
            return -1;
        process.waitForReadyRead(100);
        err += QString::fromUtf8(process.readAllStandardError());
    }
    return clock.elapsed() / 1000.0;
}

} // namespace

class TestHungNode : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void initTestCase()
    {
        QVERIFY2(::geteuid() == 0, "network namespaces and bridges need root");
        QVERIFY(m_dir.isValid());
        QVERIFY(QFile::exists(QStringLiteral("/usr/lib/openssh/sftp-server")));
    }

    void stopsWithinBoundsWhileNode0SftpHangs_data()
    {
        QTest::addColumn<QString>("how");
        QTest::newRow("Ctrl-C") << QStringLiteral("SIGINT");
        QTest::newRow("SIGTERM (the GUI's Stop)") << QStringLiteral("SIGTERM");
        QTest::newRow("SIGHUP (the GUI's Close), then launch --stop") << QStringLiteral("--stop");
        QTest::newRow("node 1's launcher killed") << QStringLiteral("kill node 1");
    }

    void stopsWithinBoundsWhileNode0SftpHangs()
    {
        QFETCH(QString, how);
        const QString name = QStringLiteral("hung-") + QString(how).remove(QLatin1Char('-'));
        const QString flag = m_dir.filePath(name + QStringLiteral(".hang"));
        HostView gated;
        gated.sftpServer = tb::test::writeHangingSftpServer(m_dir.path(), flag);
        Cluster cluster;
        const QString started = cluster.start({gated, {}});
        QVERIFY2(started.isEmpty(), qPrintable(started));
        const std::string config = loraRunConfig(m_dir, name, 5000);
        const std::string runDir = m_dir.filePath(name).toStdString();
        QProcess launcher;
        launcher.start(kCliPath, cluster.launchArguments(config) + trainerArguments(runDir));
        QVERIFY2(waitForSteps(runDir, 2), launcher.readAllStandardError().right(3000).constData());
        QVERIFY2(cluster.hosts->hangSftp(0, flag), "no SFTP session was under way on node 0");
        QTest::qWait(3000); // the launch's next read of rank 0's events gets no answer

        QString err;
        if (how == QLatin1String("kill node 1")) {
            nodeFailureIsNoticed(cluster, launcher, err);
            QCOMPARE(processesWith(QString::fromStdString(config)), QString());
            return;
        }
        if (how == QLatin1String("--stop"))
            stopFromAnotherCli(cluster, config, launcher, err);
        else
            stopBySignal(launcher, how == QLatin1String("SIGINT") ? SIGINT : SIGTERM, err);
        if (QTest::currentTestFailed())
            return;
        for (int k = 0; k < 2; ++k)
            QVERIFY2(nodeEndedOnStop(cluster, k), qPrintable(err.right(1500)));
        const std::vector<nlohmann::json> ends =
            ofType(events(runDir + "/events.jsonl"), "run_end");
        QCOMPARE(ends.size(), size_t(1));
        QCOMPARE(ends.front().value("status", std::string()), std::string("stopped"));
        QCOMPARE(processesWith(QString::fromStdString(config)), QString());
    }

private:
    // Node 1's launcher SIGKILLed: the launch names it within the review's
    // 20 s, the hung events notwithstanding, and stops node 0 within the
    // grace + 15 s after that.
    void nodeFailureIsNoticed(const Cluster& cluster, QProcess& launcher, QString& err)
    {
        const auto entry =
            tb::launch::readRegistryEntry(cluster.registryEntries(1).value(0).toStdString());
        QVERIFY(entry.ok());
        QElapsedTimer clock;
        clock.start();
        QCOMPARE(::kill(pid_t(entry->pid), SIGKILL), 0);
        const QString named = QStringLiteral("node 1 (root@%1): its launcher was killed")
                                  .arg(cluster.hosts->address(1));
        const double noticed = secondsUntil(launcher, err, named, 60);
        QVERIFY2(noticed >= 0 && noticed <= 20,
            qPrintable(QString::number(noticed) + "\n" + err.right(1500)));
        QVERIFY(launcher.waitForFinished(int((kGrace + 15) * 1000)));
        err += QString::fromUtf8(launcher.readAllStandardError());
        qInfo("node 1's launcher killed: named after %.1f s, the launch ended after %.1f s",
            noticed, clock.elapsed() / 1000.0);
        QVERIFY2(launcher.exitCode() == 1, qPrintable(err.right(1500)));
    }

    // Ctrl-C or SIGTERM to the launch: it says so within the notice bound and
    // ends within the grace + 15 s, its last read of the events cut short.
    void stopBySignal(QProcess& launcher, int signal, QString& err)
    {
        QElapsedTimer clock;
        clock.start();
        QCOMPARE(::kill(pid_t(launcher.processId()), signal), 0);
        const double noticed =
            secondsUntil(launcher, err, QStringLiteral("stop requested; stopping every node"), 30);
        QVERIFY2(noticed >= 0 && noticed <= kNoticeBound,
            qPrintable(QString::number(noticed) + "\n" + err.right(1500)));
        QVERIFY(launcher.waitForFinished(int((kGrace + 15) * 1000)));
        err += QString::fromUtf8(launcher.readAllStandardError());
        const double ended = clock.elapsed() / 1000.0;
        qInfo("SIG%s: every node signalled after %.1f s, the launch ended after %.1f s (bound %.0f "
              "s)",
            signal == SIGINT ? "INT" : "TERM", noticed, ended, kGrace + 15);
        QVERIFY2(launcher.exitCode() == 130, qPrintable(err.right(1500)));
        QVERIFY2(err.contains(QStringLiteral("rank 0's last events were not read within 5 s")),
            qPrintable(err.right(1500)));
    }

    // SIGHUP detaches the launch within the bound and the run goes on; then
    // `launch --stop RUN_ID`, whose own read of the events hangs too, stops
    // every node within the bounds.
    void stopFromAnotherCli(
        const Cluster& cluster, const std::string& config, QProcess& launcher, QString& err)
    {
        QElapsedTimer clock;
        clock.start();
        QCOMPARE(::kill(pid_t(launcher.processId()), SIGHUP), 0);
        QVERIFY(launcher.waitForFinished(int(kNoticeBound * 1000)));
        err += QString::fromUtf8(launcher.readAllStandardError());
        qInfo("SIGHUP: the launch detached after %.1f s", clock.elapsed() / 1000.0);
        QVERIFY2(launcher.exitCode() == 0 && err.contains(QStringLiteral("--from-offset")),
            qPrintable(err.right(1500)));
        const auto entry =
            tb::launch::readRegistryEntry(cluster.registryEntries(0).value(0).toStdString());
        QVERIFY(entry.ok());
        QCOMPARE(entry->state, std::string("running"));

        QProcess stopper;
        clock.restart();
        stopper.start(kCliPath,
            cluster.launchArguments(config)
                << QStringLiteral("--stop") << QString::fromStdString(entry->runId));
        const double noticed =
            secondsUntil(stopper, err, QStringLiteral("stop requested; stopping every node"), 30);
        QVERIFY2(noticed >= 0 && noticed <= kNoticeBound,
            qPrintable(QString::number(noticed) + "\n" + err.right(1500)));
        QVERIFY(stopper.waitForFinished(int((kGrace + 15) * 1000)));
        err += QString::fromUtf8(stopper.readAllStandardError());
        qInfo("launch --stop: every node signalled after %.1f s, it ended after %.1f s (bound %.0f "
              "s)",
            noticed, clock.elapsed() / 1000.0, kGrace + 15);
        QVERIFY2(stopper.exitCode() == 0, qPrintable(err.right(1500)));
        QVERIFY2(err.contains(QStringLiteral("rank 0's last events were not read within 5 s")),
            qPrintable(err.right(1500)));
    }
};

QTEST_GUILESS_MAIN(TestHungNode)
#include "test_hung_node.moc"
