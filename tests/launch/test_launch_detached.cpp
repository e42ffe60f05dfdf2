// tunebench-cli launch --detach: the launcher leaves, its ranks run on and
// the run registry records how they ended; a registry another user could
// have planted is refused, read or written.
#include "launch_cli_fixture.h"

#include "launch/run_registry.h"

using tb::test::modeOf;
using tb::test::Outcome;

class TestLaunchDetached : public tb::test::LaunchCliFixture {
    Q_OBJECT

private slots:
    void initTestCase() { QVERIFY(writeConfig()); }

    // --detach: the launcher leaves, records itself in the registry, runs
    // its ranks to the end and records how it ended; monitor lists it.
    void detachedLaunchIsRegistered()
    {
        QTemporaryDir state;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("XDG_STATE_HOME"), state.path());
        const Outcome started =
            launch(launchArgs({"--nproc", "2", "--detach", "--run-id", "detached-1"}, {}), 30000, 0,
                {}, env);
        QCOMPARE(started.exitCode, 0);
        const auto entry = tb::launch::registryEntryFromJson(started.out.toStdString(), "stdout");
        QVERIFY2(entry.ok(), started.out.constData());
        QCOMPARE(entry->runId, std::string("detached-1"));
        QCOMPARE(entry->state, std::string("running"));
        QVERIFY(entry->pid > 0);
        const std::string dir = state.path().toStdString() + "/tunebench/runs";
        const std::string path = tb::launch::registryEntryPath(dir, "detached-1", 0);
        QCOMPARE(QString::fromStdString(entry->log),
            QString::fromStdString(path.substr(0, path.size() - 5) + ".log"));
        // Private: the entries and logs hold configs, paths and the ranks' output.
        QCOMPARE(modeOf(dir), 0700);
        QCOMPARE(modeOf(path), 0600);
        QCOMPARE(modeOf(entry->log), 0600);
        QElapsedTimer waited;
        waited.start();
        auto ended = tb::launch::readRegistryEntry(path);
        while ((!ended.ok() || ended->state != "exited") && waited.elapsed() < 20000) {
            QTest::qWait(50);
            ended = tb::launch::readRegistryEntry(path);
        }
        QVERIFY(ended.ok());
        QCOMPARE(ended->state, std::string("exited"));
        QCOMPARE(ended->exitCode, 0);
        QVERIFY2(QString::fromStdString(ended->summary).startsWith("all 2 ranks finished"),
            ended->summary.c_str());
        QFile log(QString::fromStdString(entry->log));
        QVERIFY(log.open(QIODevice::ReadOnly));
        QVERIFY(log.readAll().contains("[rank 1] "));
        QProcess monitor;
        monitor.setProcessEnvironment(env);
        monitor.start(QString::fromUtf8(tb::test::cliProgram()), {QStringLiteral("monitor")});
        QVERIFY(monitor.waitForFinished(10000));
        const QString listed = QString::fromUtf8(monitor.readAllStandardOutput());
        QVERIFY2(listed.contains(QStringLiteral("detached-1"))
                && listed.contains(QStringLiteral("exit 0")),
            qPrintable(listed));
    }

    // The registry is refused, read or written, where another user could
    // have planted it: no HOME to put it in (once a /tmp fallback), or a
    // folder that others may write to.
    void registryRefusals_data()
    {
        QTest::addColumn<QString>("where"); // "no-home" or "group-writable"
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("expected");
        const QStringList detach{"--detach", "--run-id", "refused-1"};
        QTest::addRow("node-check --registry, no HOME")
            << "no-home" << QStringList{"node-check", "--registry"} << 1
            << "node-check: run registry: HOME is not set";
        QTest::addRow("launch --detach, no HOME")
            << "no-home" << detach << 2 << "launch --detach: run registry: HOME is not set";
        QTest::addRow("node-check --signal, group-writable")
            << "group-writable" << QStringList{"node-check", "--signal", "TERM", "--run-id", "x"}
            << 1 << "lets other users write to it, expected 0700";
        QTest::addRow("launch --detach, group-writable")
            << "group-writable" << detach << 2 << "lets other users write to it, expected 0700";
    }

    void registryRefusals()
    {
        QFETCH(QString, where);
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, expected);
        QTemporaryDir state;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("XDG_STATE_HOME"));
        if (where == "no-home") {
            env.remove(QStringLiteral("HOME"));
        } else {
            env.insert(QStringLiteral("XDG_STATE_HOME"), state.path());
            const QString runs = state.filePath(QStringLiteral("tunebench/runs"));
            QVERIFY(QDir().mkpath(runs));
            QVERIFY(QFile::setPermissions(runs,
                QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner
                    | QFileDevice::WriteGroup | QFileDevice::ExeGroup));
        }
        const QStringList full = args.value(0) == "node-check" ? args : launchArgs(args, {});
        const Outcome r = launch(full, 30000, 0, {}, env);
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(QString::fromUtf8(r.err).contains(expected), r.err.constData());
        if (where == "group-writable") // nothing written there
            QVERIFY(QDir(state.filePath(QStringLiteral("tunebench/runs"))).isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestLaunchDetached)
#include "test_launch_detached.moc"
