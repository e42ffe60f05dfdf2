#include "launch_cli_fixture.h"

// tunebench-cli launch as a user runs it: the real binary starting the fake
// trainer as every rank (--trainer). Environment, output, failure of one
// rank, SIGTERM/SIGINT forwarding, SIGKILL after the grace period, bad input
// (--detach and the run registry: test_launch_detached).
using tb::test::linesOf;
using tb::test::Outcome;
using tb::test::processGone;
using tb::test::rankPids;
using tb::test::summarySeconds;

class TestLaunchCli : public tb::test::LaunchCliFixture {
    Q_OBJECT

private slots:
    void initTestCase() { QVERIFY(writeConfig()); }

    void init() { clearReadyFiles(); }

    void environmentOfEveryRank_data()
    {
        QTest::addColumn<QStringList>("options");
        QTest::addColumn<int>("firstRank");
        QTest::addColumn<int>("worldSize");
        QTest::addColumn<int>("nodeRank");
        QTest::addColumn<int>("port"); // 0: picked by the launcher
        QTest::addColumn<int>("ompThreads"); // OMP_NUM_THREADS given to the launcher, 0: unset
        QTest::addColumn<QString>("runId"); // empty: a new one the banner names
        QTest::addRow("3 ranks, free port")
            << QStringList{"--nproc", "3"} << 0 << 3 << 0 << 0 << 0 << QString();
        QTest::addRow("node 1 of 3") << QStringList{"--nproc", "2", "--nnodes", "3", "--node-rank",
            "1", "--master-addr", "127.0.0.1", "--master-port", "29999"}
                                     << 2 << 6 << 1 << 29999 << 5 << "none";
        QTest::addRow("node 0 of 2, run id given") << QStringList{"--nproc", "2", "--nnodes", "2",
            "--master-port", "29998", "--run-id", "sweep-7"}
                                                   << 0 << 4 << 0 << 29998 << 3 << "sweep-7";
    }
    void environmentOfEveryRank()
    {
        QFETCH(QStringList, options);
        QFETCH(int, firstRank);
        QFETCH(int, worldSize);
        QFETCH(int, nodeRank);
        QFETCH(int, port);
        QFETCH(int, ompThreads);
        QFETCH(QString, runId);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("OMP_NUM_THREADS");
        if (ompThreads > 0)
            env.insert("OMP_NUM_THREADS", QString::number(ompThreads));
        const Outcome r = launch(launchArgs(options, {"--env", "--steps", "1"}), 30000, 0, {}, env);
        QCOMPARE(r.exitCode, 0);
        int masterPort = port;
        if (port == 0) {
            const QRegularExpression banner(QStringLiteral("master 127\\.0\\.0\\.1:(\\d+)"));
            const QRegularExpressionMatch match = banner.match(QString::fromUtf8(r.err));
            QVERIFY2(match.hasMatch(), r.err.constData());
            masterPort = match.captured(1).toInt();
            QVERIFY(masterPort > 0 && masterPort < 65536);
        }
        if (runId.isEmpty()) {
            const QRegularExpression banner(QStringLiteral("run id ([0-9a-f]{12}):"));
            const QRegularExpressionMatch match = banner.match(QString::fromUtf8(r.err));
            QVERIFY2(match.hasMatch(), r.err.constData());
            runId = match.captured(1);
        }
        const int perNode = options.at(options.indexOf("--nproc") + 1).toInt();
        // Unset: each rank gets an equal share of the CPUs; set: left alone.
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        QCOMPARE(sched_getaffinity(0, sizeof cpus, &cpus), 0);
        const int expectedOmp =
            ompThreads > 0 ? ompThreads : std::max(1, CPU_COUNT(&cpus) / perNode);
        for (int local = 0; local < perNode; ++local) {
            const int rank = firstRank + local;
            const QByteArray expected =
                QStringLiteral("[rank %1] env RANK=%1 WORLD_SIZE=%2 LOCAL_RANK=%3 "
                               "LOCAL_WORLD_SIZE=%4 NODE_RANK=%5 GROUP_RANK=%5 "
                               "MASTER_ADDR=127.0.0.1 MASTER_PORT=%6 OMP_NUM_THREADS=%7 "
                               "TORCHELASTIC_RUN_ID=%8")
                    .arg(rank)
                    .arg(worldSize)
                    .arg(local)
                    .arg(perNode)
                    .arg(nodeRank)
                    .arg(masterPort)
                    .arg(expectedOmp)
                    .arg(runId)
                    .toUtf8();
            QVERIFY2(linesOf(r.out).contains(expected), (expected + "\n---\n" + r.out).constData());
        }
        QVERIFY(r.err.contains("all " + QByteArray::number(perNode) + " ranks finished"));
    }

    // Lines arrive whole and prefixed however the rank writes them.
    void outputIsPrefixedAndWhole()
    {
        const Outcome r = launch(launchArgs({"--nproc", "2"}, {"--junk"}));
        QCOMPARE(r.exitCode, 0);
        const QList<QByteArray> out = linesOf(r.out);
        const QList<QByteArray> err = linesOf(r.err);
        const QRegularExpression prefix(QStringLiteral("^\\[rank [01]\\] "));
        for (const QByteArray& line : out)
            QVERIFY2(prefix.match(QString::fromLatin1(line)).hasMatch(), line.left(80).constData());
        for (const QByteArray& line : err) {
            if (!line.startsWith("tunebench-cli launch: "))
                QVERIFY2(prefix.match(QString::fromLatin1(line)).hasMatch(), line.constData());
        }
        for (const char* rankText : {"0", "1"}) {
            const QByteArray rank(rankText);
            const QByteArray tag = "[rank " + rank + "] ";
            QVERIFY(out.contains(tag + "alpha-beta-gamma-rank" + rank));
            QVERIFY(out.contains(tag + "bytes \xff\xfe\xc3 rank" + rank));
            QVERIFY(out.contains(tag + "unterminated-rank" + rank));
            QVERIFY(err.contains(tag + "err-one-rank" + rank));
            // 100,000 bytes without a newline arrive as a 64 KiB line and the rest.
            QVERIFY(out.contains(tag + QByteArray(65536, 'x')));
            QVERIFY(out.contains(tag + QByteArray(100000 - 65536, 'x')));
        }
    }

    void failingRankEndsTheOthers_data()
    {
        QTest::addColumn<QString>("how");
        QTest::addColumn<QString>("status");
        QTest::addRow("exit 7") << "exit:7"
                                << "exit status 7";
        QTest::addRow("abort") << "abort"
                               << "signal 6 (SIGABRT";
        QTest::addRow("segfault") << "segv"
                                  << "signal 11 (SIGSEGV";
    }
    void failingRankEndsTheOthers()
    {
        QFETCH(QString, how);
        QFETCH(QString, status);
        // The other ranks would wait 60 s: the launcher has to end them.
        const Outcome r = launch(launchArgs({"--nproc", "3"},
                                     {"--steps", "2", "--step-ms", "50", "--fail-rank", "1",
                                         "--fail-how", how, "--sleep-ms", "60000"}),
            20000);
        QCOMPARE(r.exitCode, 1);
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.contains("rank 1 failed with " + status), r.err.constData());
        QVERIFY2(err.contains("its last error: \"fatal: rank 1 giving up (simulated failure)\""),
            r.err.constData());
        for (const char* rank : {"0", "2"})
            QVERIFY2(err.contains(QStringLiteral("[rank %1] rank %1: SIGTERM received, stopping "
                                                 "gracefully")
                                      .arg(rank)),
                r.err.constData());
        for (const qint64 pid : rankPids(r.out))
            QVERIFY2(processGone(pid), qPrintable(QString::number(pid)));
        qInfo("%s: the other ranks ended %.3f s after rank 1 failed; launcher ran %lld ms",
            qPrintable(how), summarySeconds(r.err), r.elapsedMs);
    }

    void stopSignalIsForwarded_data()
    {
        QTest::addColumn<int>("signal");
        QTest::addColumn<QString>("name");
        QTest::addRow("SIGTERM") << int(SIGTERM) << "SIGTERM";
        QTest::addRow("SIGINT") << int(SIGINT) << "SIGINT";
    }
    void stopSignalIsForwarded()
    {
        QFETCH(int, signal);
        QFETCH(QString, name);
        const Outcome r =
            launch(launchArgs({"--nproc", "3"},
                       {"--steps", "1", "--sleep-ms", "60000", "--ready-file", readyPrefix()}),
                20000, 3, {signal});
        QCOMPARE(r.exitCode, 128 + signal);
        const QString err = QString::fromUtf8(r.err);
        for (int rank = 0; rank < 3; ++rank)
            QVERIFY2(err.contains(QStringLiteral("[rank %1] rank %1: %2 received, stopping "
                                                 "gracefully")
                                      .arg(rank)
                                      .arg(name)),
                r.err.constData());
        QVERIFY2(err.contains("stopped by " + name + "; all 3 rank(s) ended"), r.err.constData());
        QVERIFY(!err.contains("SIGKILL"));
        qInfo(
            "%s: all ranks ended %.3f s after the signal", qPrintable(name), summarySeconds(r.err));
    }

    void ignoredSigtermIsKilledAfterGrace()
    {
        const Outcome r = launch(launchArgs({"--nproc", "2", "--grace", "1"},
                                     {"--ignore-term", "--steps", "1", "--sleep-ms", "60000",
                                         "--ready-file", readyPrefix()}),
            20000, 2, {SIGTERM});
        QCOMPARE(r.exitCode, 128 + SIGTERM);
        QVERIFY2(r.err.contains("2 killed with SIGKILL after ignoring SIGTERM: rank 0 rank 1"),
            r.err.constData());
        const QList<qint64> pids = rankPids(r.out);
        QCOMPARE(pids.size(), 2);
        for (const qint64 pid : pids)
            QVERIFY(processGone(pid));
        qInfo("ranks ignoring SIGTERM were killed; all ended %.3f s after the signal (grace 1 s)",
            summarySeconds(r.err));
    }

    // A second stop request does not wait for the grace period.
    void secondSignalKillsAtOnce()
    {
        const Outcome r = launch(launchArgs({"--nproc", "2", "--grace", "60"},
                                     {"--ignore-term", "--steps", "1", "--sleep-ms", "60000",
                                         "--ready-file", readyPrefix()}),
            20000, 2, {SIGTERM, SIGTERM});
        QCOMPARE(r.exitCode, 128 + SIGTERM);
        QVERIFY2(r.err.contains("killed with SIGKILL"), r.err.constData());
    }

    void badInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        const QString trainer = QString::fromUtf8(tb::test::fakeTrainerProgram());
        QTest::addRow("missing config") << QStringList{"launch", "/nonexistent/run.yaml",
            "--trainer", trainer} << "/nonexistent/run.yaml";
        QTest::addRow("no config")
            << QStringList{"launch", "--nproc", "2"} << "expected one run config";
        QTest::addRow("nproc 0") << QStringList{"--nproc", "0"} << "--nproc: got 0";
        QTest::addRow("nproc not a number")
            << QStringList{"--nproc", "four"} << "--nproc: got 'four'";
        QTest::addRow("nodes without port")
            << QStringList{"--nnodes", "2"} << "--master-port: needed";
        QTest::addRow("node rank too big") << QStringList{"--nnodes", "2", "--node-rank", "2",
            "--master-port", "1234"} << "--node-rank: got 2, expected 0 to 1";
        QTest::addRow("worker without master") << QStringList{"--nnodes", "2", "--node-rank", "1",
            "--master-port", "1234"} << "--master-addr: needed";
        QTest::addRow("bad master address")
            << QStringList{"--master-addr", "no-such-host.invalid"} << "no-such-host.invalid";
        QTest::addRow("run id with a space")
            << QStringList{"--run-id", "my job"} << "run_id: got 'my job', expected up to 128";
        QTest::addRow("run id up a folder")
            << QStringList{"--run-id", "../x"} << "run_id: got '../x', expected up to 128";
        QTest::addRow("run id a dot")
            << QStringList{"--run-id", "."} << "run_id: got '.', expected";
        QTest::addRow("unknown option")
            << QStringList{"--nprocs", "2"} << "unknown option '--nprocs'";
        QTest::addRow("devices not indices") << QStringList{
            "--devices", "0;rm"} << "--devices: got '0;rm', expected GPU indices like 0,2";
#ifdef TB_WITH_SSH
        QTest::addRow("hostfile missing") << QStringList{"launch", m_config, "--hostfile",
            "/nonexistent/hosts"} << "hostfile '/nonexistent/hosts': cannot be read";
        QTest::addRow("hostfile with --nproc") << QStringList{"--hostfile", "/nonexistent/hosts",
            "--nproc", "2"} << "--nproc is for one node";
        QTest::addRow("stop and attach") << QStringList{"--hostfile", "/x", "--stop", "a",
            "--attach", "b"} << "--stop and --attach: give one of them";
        QTest::addRow("multi-node run id up a folder") << QStringList{"launch", m_config,
            "--hostfile", "/x", "--run-id", "../x"} << "launch: --run-id: run_id: got '../x'";
        QTest::addRow("stop a run id up a folder") << QStringList{"launch", m_config, "--hostfile",
            "/x", "--stop", "../x"} << "launch: --stop: run_id: got '../x'";
        QTest::addRow("attach to a run id with a slash") << QStringList{"launch", m_config,
            "--hostfile", "/x", "--attach", "a/b"} << "launch: --attach: run_id: got 'a/b'";
#else
        QTest::addRow("hostfile without SSH") << QStringList{"--hostfile", "/nonexistent/hosts"}
                                              << "--hostfile: this build has no SSH";
#endif
    }
    void badInput()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const QStringList full = args.value(0) == "launch" ? args : launchArgs(args, {});
        const Outcome r = launch(full);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains(expected), r.err.constData());
        QVERIFY(!r.out.contains("[rank"));
    }

    void badConfigNamesTheField()
    {
        const QString bad = m_dir.filePath(QStringLiteral("bad.yaml"));
        QFile file(bad);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("modle: ./model\ndata:\n  train: train.jsonl\n");
        file.close();
        const Outcome r = launch({"launch", bad, "--trainer", tb::test::fakeTrainerProgram()});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("bad.yaml") && r.err.contains("modle"), r.err.constData());
    }

    void unstartableTrainer()
    {
        const Outcome r =
            launch({"launch", m_config, "--nproc", "2", "--trainer", "/nonexistent/trainer"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("cannot start '/nonexistent/trainer'"), r.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestLaunchCli)
#include "test_launch_cli.moc"
