// `tunebench-cli launch --hostfile` across machines that are network
// namespaces on this one (tests/remote/netns_cluster.h), each with its own
// sshd: a 2-node LoRA run equals one process, every preflight failure stops
// the launch before a rank starts and names the host, a dropped link loses
// and doubles no event, `monitor --host` finds the run in the registry, and
// --sync copies what a node lacks (stopping a run: test_multi_node_stop).
#include "../support/cli_outcome.h"
#include "../support/qt_test_paths.h"
#include "../train/distributed_runs.h"
#include "multi_node_checks.h"
#include "namespace_launch.h"

#include "common/text.h"
#include "launch/run_registry.h"
#include "remote/launcher_status.h"

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QtTest>
#include <csignal>

using tb::test::CliOutcome;

class TestMultiNode : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::string m_reference; // one process, the same global batch

    std::string config(const QString& name, int maxSteps = kSteps)
    {
        return loraRunConfig(m_dir, name, maxSteps);
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(::geteuid() == 0, "network namespaces and bridges need root");
        QVERIFY(m_dir.isValid());
        RunSpec spec;
        spec.method = QStringLiteral("lora");
        const std::string single = writeConfig(m_dir, QStringLiteral("single"), spec);
        m_reference = m_dir.filePath(QStringLiteral("reference")).toStdString();
        const Ended ended = runOne(kCli, ::single(single, m_reference));
        QVERIFY2(ended.finished && ended.exitCode == 0, qPrintable(ended.err));
    }

    // The run config and run folder sit in a folder whose name a shell would
    // take apart: every remote argument must arrive as one word.
    void twoNodesEqualOneProcess()
    {
        Cluster cluster;
        const QString failure = cluster.start({{}, {}});
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        const QString injected = m_dir.filePath(QStringLiteral("INJECTED"));
        const QString awkward = QStringLiteral("a b'c\"d $(touch %1); =e f").arg(injected);
        QVERIFY(QDir(m_dir.path()).mkpath(awkward));
        const std::string runDir = m_dir.filePath(awkward + "/two-nodes").toStdString();
        const CliOutcome run = tb::test::runProgram(kCliPath,
            cluster.launchArguments(config(awkward + "/two")) + trainerArguments(runDir), 240000);
        QVERIFY2(run.exitCode == 0, qPrintable(run.err + run.out));
        QVERIFY(!QFile::exists(injected));
        QVERIFY2(run.err.contains(QStringLiteral("finished on every node")), qPrintable(run.err));
        // The shared-folder check's marker, written where the run folder was made, is gone.
        QCOMPARE(
            QDir(m_dir.filePath(awkward))
                .entryList({QStringLiteral(".tunebench-shared-*")}, QDir::Files | QDir::Hidden),
            QStringList());
        // Rank 0's events came over SFTP, a line per step.
        QCOMPARE(run.out.count(QRegularExpression(QStringLiteral("^step \\d+/%1 ").arg(kSteps),
                     QRegularExpression::MultilineOption)),
            kSteps);
        QString problem;
        const Tensors expected =
            readTensors(exportOf(m_reference, QStringLiteral("lora")), &problem);
        const Tensors got = readTensors(exportOf(runDir, QStringLiteral("lora")), &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        const double worst = maxAbsDiff(expected, got, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QVERIFY2(worst <= kLoraTolerance, qPrintable(QString::number(worst)));
        const double steps = maxRelativeDiff(stepFigures(events(runDir + "/events.jsonl")),
            stepFigures(events(m_reference + "/events.jsonl")));
        QVERIFY2(steps <= kStepTolerance, qPrintable(QString::number(steps)));
        // The run secret reached both nodes over SSH: the ranks proved it,
        // so rank 0 has no warning of a rendezvous joined without one.
        for (const nlohmann::json& warning : ofType(events(runDir + "/events.jsonl"), "warning"))
            QVERIFY2(warning.value("message", "").find("without a run secret") == std::string::npos,
                warning.dump().c_str());
        // Each node recorded its part, and how it ended.
        for (int k = 0; k < 2; ++k) {
            const QStringList entries = cluster.registryEntries(k);
            QCOMPARE(entries.size(), 1);
            const auto entry = tb::launch::readRegistryEntry(entries.front().toStdString());
            QVERIFY(entry.ok());
            QCOMPARE(entry->state, std::string("exited"));
            QCOMPARE(entry->exitCode, 0);
            QCOMPARE(entry->nodeRank, k);
        }
        fetchesTheAdapterBack(cluster, run.err, runDir);
    }

    void preflightFailureStartsNothing_data()
    {
        QTest::addColumn<int>("failure");
        QTest::addColumn<QString>("expected");
        QTest::newRow("binary missing") << 0 << "is not there";
        QTest::newRow("another build") << 1 << "another build of tunebench-cli";
        QTest::newRow("unknown host key") << 2 << "is not in";
        QTest::newRow("changed host key") << 3 << "the host key changed";
        QTest::newRow("master port unreachable") << 4 << "cannot reach the master port";
        QTest::newRow("dataset missing") << 5 << "tiny_instructions.jsonl is missing";
        QTest::newRow("master port taken") << 6 << "the port check cannot listen on";
        QTest::newRow("run folder not shared") << 7 << "is not shared with node 0 (node 0 wrote ";
    }

    void preflightFailureStartsNothing()
    {
        QFETCH(int, failure);
        QFETCH(QString, expected);
        HostView second;
        if (failure == 0)
            second.hiddenFolders << tb::test::qBuildPath("app/cli");
        if (failure == 1)
            second.fileOverlays << qMakePair(otherBuild(), kCliPath);
        if (failure == 5)
            second.hiddenFolders << tb::test::qSourcePath("resources/demo");
        // Node 1's own disk where the run folder goes (review M6).
        const QString separate = m_dir.filePath(QStringLiteral("separate"));
        if (failure == 7) {
            QVERIFY(QDir().mkpath(separate));
            second.hiddenFolders << separate;
        }
        Cluster cluster;
        const QString started = cluster.start({{}, second});
        QVERIFY2(started.isEmpty(), qPrintable(started));
        QString knownHosts;
        if (failure == 2)
            knownHosts = cluster.hosts->knownHostsWithout(1);
        if (failure == 3)
            knownHosts = cluster.hosts->knownHostsChanged(1);
        if (failure == 4)
            QVERIFY(cluster.hosts->blockRoute(1, 0));
        QStringList arguments =
            cluster.launchArguments(config(QStringLiteral("preflight")), knownHosts);
        QProcess holder; // the master port held on node 0
        if (failure == 6) {
            arguments << QStringLiteral("--master-port") << QStringLiteral("29511");
            holder.start(QStringLiteral("ip"),
                {QStringLiteral("netns"), QStringLiteral("exec"), cluster.hosts->ns(0), kCliPath,
                    QStringLiteral("node-check"), QStringLiteral("--listen"),
                    QStringLiteral("29511"), QStringLiteral("--address"), cluster.hosts->address(0),
                    QStringLiteral("--peers"), QStringLiteral("100"), QStringLiteral("--nonce"),
                    QStringLiteral("0123456789abcdef"), QStringLiteral("--timeout"),
                    QStringLiteral("60")});
            QVERIFY(holder.waitForStarted());
            QTRY_VERIFY_WITH_TIMEOUT(listensOn(cluster.hosts->ns(0), 29511), 10000);
        }
        const std::string runDir =
            (failure == 7 ? separate + "/preflight-7"
                          : m_dir.filePath(QStringLiteral("preflight-%1").arg(failure)))
                .toStdString();
        arguments << QStringLiteral("--status-json");
        const CliOutcome run =
            tb::test::runProgram(kCliPath, arguments + trainerArguments(runDir), 120000);
        holder.kill();
        holder.waitForFinished();
        QCOMPARE(run.exitCode, 2);
        const QString node = failure == 6
            ? QStringLiteral("node 0 (root@%1)").arg(cluster.hosts->address(0))
            : QStringLiteral("node 1 (root@%1)").arg(cluster.hosts->address(1));
        QVERIFY2(run.err.contains(node), qPrintable(run.err));
        QVERIFY2(run.err.contains(expected), qPrintable(run.err));
        QVERIFY2(run.err.contains(QStringLiteral("nothing was started")), qPrintable(run.err));
        // The same, typed, on stdout: what the Runs page reads.
        const std::vector<tb::remote::LauncherStatus> statuses = launcherStatuses(run.out);
        bool refused = false;
        for (const tb::remote::LauncherStatus& status : statuses) {
            if (status.type != tb::remote::LauncherStatus::Type::PreflightFailed)
                continue;
            refused = true;
            QVERIFY2(
                QString::fromStdString(tb::common::join(status.problems, "\n")).contains(expected),
                qPrintable(run.out));
        }
        QVERIFY2(refused, qPrintable(run.out));
        // The master port and the shared folder are the launch's checks, not one node's.
        if (failure != 4 && failure != 6 && failure != 7) {
            const auto failed =
                std::find_if(statuses.begin(), statuses.end(), [](const auto& status) {
                    return status.type == tb::remote::LauncherStatus::Type::Node
                        && status.node.node == 1
                        && status.node.state == tb::remote::NodeState::CheckFailed;
                });
            QVERIFY2(failed != statuses.end(), qPrintable(run.out));
            QVERIFY(!failed->node.problems.empty());
        }
        QVERIFY(cluster.registryEntries(0).isEmpty());
        QVERIFY(cluster.registryEntries(1).isEmpty());
        QVERIFY(!fs::exists(runDir));
        if (failure == 7) // node 0's marker is gone again
            QCOMPARE(QDir(separate).entryList(QDir::Files | QDir::Hidden), QStringList());
    }

    // The run is long and is stopped from outside once the monitor follows
    // it, so the check does not race the run's speed on a fast machine.
    void detachedLaunchIsFollowedAgainWithNoEventLostOrDoubled()
    {
        Cluster cluster;
        const QString started = cluster.start({{}, {}});
        QVERIFY2(started.isEmpty(), qPrintable(started));
        const std::string config = this->config(QStringLiteral("detached"), 5000);
        const std::string runDir = m_dir.filePath(QStringLiteral("detached")).toStdString();
        QProcess launcher;
        launcher.start(kCliPath, cluster.launchArguments(config) + trainerArguments(runDir));
        QVERIFY(waitForSteps(runDir, 3));
        // The link to node 0 drops: the launch reconnects and reads on.
        QVERIFY(cluster.hosts->dropConnections(0));
        QString err;
        QElapsedTimer clock;
        clock.start();
        while (!err.contains(
                   QStringLiteral("node 0 (root@%1): reconnected").arg(cluster.hosts->address(0)))
            && clock.elapsed() < 60000) {
            launcher.waitForReadyRead(500);
            err += QString::fromUtf8(launcher.readAllStandardError());
        }
        QVERIFY2(err.contains(QStringLiteral("reconnected")), qPrintable(err));
        QVERIFY(waitForSteps(runDir, stepsWritten(runDir) + 2));
        ::kill(pid_t(launcher.processId()), SIGHUP); // the terminal closed
        QVERIFY(launcher.waitForFinished(30000));
        QCOMPARE(launcher.exitCode(), 0);
        err += QString::fromUtf8(launcher.readAllStandardError());
        const QString firstOut = QString::fromUtf8(launcher.readAllStandardOutput());
        const QRegularExpressionMatch resume = QRegularExpression(
            QStringLiteral("--run (\\S+) --from-offset (\\d+) --from-line (\\d+)"))
                                                   .match(err);
        QVERIFY2(resume.hasMatch(), qPrintable(err));

        const QStringList remote = {QStringLiteral("--host"),
            QStringLiteral("root@") + cluster.hosts->address(0), QStringLiteral("--identity"),
            cluster.hosts->userKey(), QStringLiteral("--known-hosts"), cluster.hosts->knownHosts()};
        const CliOutcome listed =
            tb::test::runProgram(kCliPath, QStringList{QStringLiteral("monitor")} + remote);
        QCOMPARE(listed.exitCode, 0);
        QVERIFY2(listed.out.contains(resume.captured(1))
                && listed.out.contains(QStringLiteral("running")),
            qPrintable(listed.out + listed.err));
        QProcess follower;
        follower.start(kCliPath,
            QStringList{QStringLiteral("monitor"), QStringLiteral("--run"), resume.captured(1),
                QStringLiteral("--from-offset"), resume.captured(2), QStringLiteral("--from-line"),
                resume.captured(3), QStringLiteral("--poll"), QStringLiteral("0.2")}
                + remote);
        QString followedOut;
        clock.restart();
        while (printedSteps(followedOut).size() < 3 && clock.elapsed() < 60000) {
            follower.waitForReadyRead(500);
            followedOut += QString::fromUtf8(follower.readAllStandardOutput());
        }
        QVERIFY2(printedSteps(followedOut).size() >= 3, qPrintable(followedOut));
        const CliOutcome stop = tb::test::runProgram(kCliPath,
            cluster.launchArguments(config) << QStringLiteral("--stop") << resume.captured(1),
            60000);
        QVERIFY2(stop.exitCode == 0, qPrintable(stop.err));
        QVERIFY2(follower.waitForFinished(120000), "the monitor did not end with the run");
        followedOut += QString::fromUtf8(follower.readAllStandardOutput());
        QVERIFY2(follower.exitCode() == 0,
            qPrintable(QString::fromUtf8(follower.readAllStandardError())));

        std::vector<int> all = printedSteps(firstOut);
        const std::vector<int> rest = printedSteps(followedOut);
        all.insert(all.end(), rest.begin(), rest.end());
        const int written = stepsWritten(runDir);
        QVERIFY2(all == oneToN(written),
            qPrintable(QStringLiteral("%1 steps printed, %2 written; the monitor's last lines:\n%3")
                           .arg(all.size())
                           .arg(written)
                           .arg(followedOut.right(600))));
        QVERIFY(followedOut.contains(QStringLiteral("run_end    stopped")));
    }

    // Node 1 has neither the model nor the data: --sync copies them, a second
    // launch finds them equal, and a copy cut short goes on where it stopped.
    void syncCopiesWhatANodeLacks()
    {
        HostView bare;
        bare.hiddenFolders << QString::fromStdString(kModel)
                           << tb::test::qSourcePath("resources/demo");
        Cluster cluster;
        const QString started = cluster.start({{}, bare});
        QVERIFY2(started.isEmpty(), qPrintable(started));
        const std::string config = this->config(QStringLiteral("synced"));
        const QStringList preflight = cluster.launchArguments(config)
            << QStringLiteral("--preflight-only");
        const CliOutcome without = tb::test::runProgram(kCliPath, preflight);
        QCOMPARE(without.exitCode, 2);
        QVERIFY2(without.err.contains(QStringLiteral("model.safetensors is missing")),
            qPrintable(without.err));

        const CliOutcome first = tb::test::runProgram(
            kCliPath, QStringList(preflight) << QStringLiteral("--sync"), 120000);
        QVERIFY2(first.exitCode == 0, qPrintable(first.err));
        // The model folder's files and the dataset; the run config is shared.
        int files = 1;
        for (const fs::directory_entry& entry : fs::directory_iterator(kModel))
            files += entry.is_regular_file();
        QVERIFY2(first.err.contains(QStringLiteral("node 1 (root@%1): synced %2 file(s) (0 resumed")
                                        .arg(cluster.hosts->address(1))
                                        .arg(files)),
            qPrintable(first.err));
        QVERIFY2(first.err.contains(QStringLiteral("node 0 (root@%1): synced 0 file(s)")
                                        .arg(cluster.hosts->address(0))),
            qPrintable(first.err));
        QVERIFY2(first.err.contains(QStringLiteral("sync 100.0%")), qPrintable(first.err));
        // The copies there are the user's alone, whatever their mode here.
        const std::string weights = kModel + "/model.safetensors";
        QVERIFY(QFile::permissions(QString::fromStdString(weights)) & QFileDevice::ReadOther);
        const QString mode =
            QStringLiteral("stat -c %a ") + tb::test::quoted(QString::fromStdString(weights));
        QCOMPARE(cluster.hosts->runInView(1, mode).output.trimmed(), QStringLiteral("600"));

        const qint64 half = qint64(fs::file_size(weights) / 2);
        QCOMPARE(cluster.hosts
                     ->runInView(1,
                         QStringLiteral("head -c %1 %2 > %2.tbpart && rm %2")
                             .arg(half)
                             .arg(tb::test::quoted(QString::fromStdString(weights))))
                     .exitCode,
            0);
        const std::string runDir = m_dir.filePath(QStringLiteral("synced")).toStdString();
        const CliOutcome again = tb::test::runProgram(kCliPath,
            cluster.launchArguments(config) << QStringLiteral("--sync") << trainerArguments(runDir),
            240000);
        QVERIFY2(again.exitCode == 0, qPrintable(again.err));
        QVERIFY2(again.err.contains(
                     QStringLiteral("synced 1 file(s) (1 resumed, %1 bytes sent), %2 already equal")
                         .arg(fs::file_size(weights) - quint64(half))
                         .arg(files)),
            qPrintable(again.err));
        QVERIFY(fs::exists(exportOf(runDir, QStringLiteral("lora"))));
    }

private:
    // `fetch --run ID` from node 0: a part left by an interrupted copy is
    // continued, the result is the run's adapter byte for byte, and a second
    // fetch finds everything equal.
    void fetchesTheAdapterBack(
        const Cluster& cluster, const QString& launchErr, const std::string& runDir)
    {
        const QRegularExpressionMatch id =
            QRegularExpression(QStringLiteral("run (\\S+) on 2 node")).match(launchErr);
        QVERIFY(id.hasMatch());
        const QString to = m_dir.filePath(QStringLiteral("fetched"));
        const std::string weights = runDir + "/adapter/adapter_model.safetensors";
        QFile original(QString::fromStdString(weights));
        QVERIFY(original.open(QIODevice::ReadOnly));
        const QByteArray bytes = original.readAll();
        QVERIFY(QDir().mkpath(to + "/adapter"));
        QFile part(to + "/adapter/adapter_model.safetensors.tbpart");
        QVERIFY(part.open(QIODevice::WriteOnly));
        part.write(bytes.left(bytes.size() / 3));
        part.close();
        const QStringList fetch = {QStringLiteral("fetch"), QStringLiteral("--host"),
            QStringLiteral("root@") + cluster.hosts->address(0), QStringLiteral("--identity"),
            cluster.hosts->userKey(), QStringLiteral("--known-hosts"), cluster.hosts->knownHosts(),
            QStringLiteral("--run"), id.captured(1), QStringLiteral("--to"), to};
        const CliOutcome first = tb::test::runProgram(kCliPath, fetch);
        QVERIFY2(first.exitCode == 0, qPrintable(first.err));
        QVERIFY2(first.out.contains(QStringLiteral("adapter: "))
                && first.out.contains(QStringLiteral("(1 resumed")),
            qPrintable(first.out));
        QFile fetched(to + "/adapter/adapter_model.safetensors");
        QVERIFY(fetched.open(QIODevice::ReadOnly));
        QVERIFY(fetched.readAll() == bytes);
        QVERIFY(!QFile::exists(part.fileName()));
        const CliOutcome second = tb::test::runProgram(kCliPath, fetch);
        QVERIFY2(second.exitCode == 0, qPrintable(second.err));
        QVERIFY2(second.out.contains(QStringLiteral("adapter: 0 file(s) copied")),
            qPrintable(second.out));
    }

    // tunebench-cli with another build id: another link of the same sources
    // reads the same to everything but the id.
    QString otherBuild()
    {
        const QString copy = m_dir.filePath(QStringLiteral("tunebench-cli-other"));
        if (QFile::exists(copy))
            return copy;
        QFile::copy(kCliPath, copy);
        QFile::setPermissions(copy, QFile::permissions(kCliPath));
        const tb::test::CommandOutput id =
            tb::test::shell(kCliPath + " --version | sed -n 's/.*build id *//p'");
        const QByteArray hex = id.output.trimmed().toLatin1();
        QFile file(copy);
        file.open(QIODevice::ReadWrite);
        QByteArray bytes = file.readAll();
        const QByteArray raw = QByteArray::fromHex(hex);
        const qsizetype at = bytes.indexOf(raw);
        if (at >= 0) {
            bytes[at] = char(bytes[at] ^ 0xff);
            file.seek(0);
            file.write(bytes);
        }
        return copy;
    }
};

QTEST_GUILESS_MAIN(TestMultiNode)
#include "test_multi_node.moc"
