// core/remote against a real OpenSSH sshd on loopback: commands, host-key
// and key checks, an event file followed over SFTP, and `tunebench-cli
// monitor` following and stopping a real run over SSH.
#include "../support/endless_run.h"
#include "../support/event_lines.h"
#include "../support/qt_test_paths.h"
#include "sshd_target.h"

#include "launch/run_registry.h"
#include "launch/text_quote.h"
#include "metrics/event.h"
#include "metrics/event_file_reader.h"
#include "metrics/step_record.h"
#include "remote/cluster_launch.h"
#include "remote/host_probe.h"
#include "remote/sftp_event_source.h"
#include "remote/file_checksums.h"
#include "remote/sftp_transfer.h"
#include "remote/ssh_session.h"

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QtTest>

#include <atomic>
#include <random>
#include <csignal>
#include <thread>

using tb::remote::SshSession;
using tb::remote::SshTarget;
using tb::test::appendLine;
using tb::test::stepLine;

namespace {

QString commandLineOf(long long pid)
{
    QFile file(QStringLiteral("/proc/%1/cmdline").arg(pid));
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()).replace(QChar(0), QChar(' ')) : QString();
}

std::string runStartEvent()
{
    return tb::metrics::makeEvent(tb::metrics::EventType::RunStart, 0, 1.0e9,
        {{"run_id", "remote-demo"}, {"world_size", 1}, {"config", nlohmann::json::object()},
            {"model", {{"name", "stories260K"}}}, {"total_steps", 4}, {"host", "somewhere"}})
        .dump();
}

struct CliRun {
    int exitCode = -1;
    QString out;
    QString err;
};

CliRun cli(const QStringList& arguments, int timeoutMs = 120000, const QString& workingDir = {})
{
    QProcess process;
    if (!workingDir.isEmpty())
        process.setWorkingDirectory(workingDir);
    process.start(tb::test::qBuildPath("app/cli/tunebench-cli"), arguments);
    CliRun run;
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        run.err = QStringLiteral("timed out\n");
    }
    run.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    run.out = QString::fromUtf8(process.readAllStandardOutput());
    run.err += QString::fromUtf8(process.readAllStandardError());
    return run;
}

} // namespace

class TestRemote : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        const QString failure = m_server.start();
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        const QString bannerFailure = m_bannerServer.start(true);
        QVERIFY2(bannerFailure.isEmpty(), qPrintable(bannerFailure));
        QVERIFY(writeSlowSha256sum(m_slowHashServer.path("bin")));
        const QString slowFailure = m_slowHashServer.start(false, m_slowHashServer.path("bin"));
        QVERIFY2(slowFailure.isEmpty(), qPrintable(slowFailure));
        QVERIFY(m_work.isValid());
    }

    void runsCommands()
    {
        auto session = SshSession::connect(target());
        QVERIFY2(session.ok(), session.ok() ? "" : session.error().toString().c_str());
        const auto result = (*session)->run("echo out; echo err >&2; exit 3");
        QVERIFY(result.ok());
        QCOMPARE(result->exitStatus, 3);
        QCOMPARE(result->output, std::string("out\n"));
        QCOMPARE(result->errorOutput, std::string("err\n"));
        const auto quoted = (*session)->run("printf %s " + tb::launch::shellQuote("it's a 'test' $HOME"));
        QVERIFY(quoted.ok());
        QCOMPARE(quoted->output, std::string("it's a 'test' $HOME"));
    }

    void refusals_data()
    {
        QTest::addColumn<QString>("problem");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("unknown host key")
            << "unknown" << QStringList{"host key SHA256:", "is not in", "ssh-keygen -F '[127.0.0.1]:",
                   "Only if they match", "ssh -o UserKnownHostsFile="};
        QTest::newRow("changed host key")
            << "changed" << QStringList{"the host key changed", "refusing to connect"};
        QTest::newRow("key not authorized") << "key" << QStringList{"was not accepted"};
        QTest::newRow("missing identity file") << "no-key" << QStringList{"identity file", "cannot read"};
        QTest::newRow("nothing listening") << "port" << QStringList{"cannot connect"};
    }

    void refusals()
    {
        QFETCH(QString, problem);
        QFETCH(QStringList, expected);
        SshTarget bad = target();
        if (problem == "unknown")
            bad.knownHostsFile = m_work.filePath(QStringLiteral("empty_known_hosts")).toStdString();
        else if (problem == "changed")
            bad.knownHostsFile = m_server.knownHostsWithOtherKey().toStdString();
        else if (problem == "key")
            bad.identityFile = m_server.otherUserKey().toStdString();
        else if (problem == "no-key")
            bad.identityFile = m_work.filePath(QStringLiteral("no_such_key")).toStdString();
        else
            bad.port = tb::launch::pickFreePort("127.0.0.1").value();
        const auto session = SshSession::connect(bad);
        QVERIFY(!session.ok());
        const QString message = QString::fromStdString(session.error().toString());
        for (const QString& fragment : expected)
            QVERIFY2(message.contains(fragment), qPrintable(message));
        if (problem != "no-key")
            QVERIFY2(message.contains(QString::fromStdString(bad.describe())), qPrintable(message));
    }

    void followsAnEventFileOverSftp()
    {
        auto session = SshSession::connect(target());
        QVERIFY(session.ok());
        const QString path = m_work.filePath(QStringLiteral("sftp/events.jsonl"));
        tb::metrics::EventFileReader reader(tb::remote::sftpEventSource(**session, path.toStdString()));
        auto nothing = reader.poll();
        QVERIFY2(nothing.ok(), nothing.ok() ? "" : nothing.error().toString().c_str());
        QVERIFY(nothing->empty()); // not written yet: not an error
        QVERIFY(QDir().mkpath(m_work.filePath(QStringLiteral("sftp"))));
        appendLine(path, runStartEvent());
        appendLine(path, stepLine(1, 1500.0));
        auto first = reader.poll();
        QVERIFY(first.ok());
        QCOMPARE(first->size(), std::size_t{2});
        appendLine(path, stepLine(2, 1500.0));
        appendLine(path, "{\"schema\":1,\"type\":\"step\"");
        auto second = reader.poll();
        QVERIFY(second.ok());
        QCOMPARE(second->size(), std::size_t{2});
        QCOMPARE((*second)[0].event->body["step"].get<int>(), 2);
        QVERIFY2(QString::fromStdString((*second)[1].error).startsWith(QStringLiteral("127.0.0.1:") + path + ":4:"),
            (*second)[1].error.c_str());
        QFile::resize(path, 10);
        const auto shrunk = reader.poll();
        QVERIFY(!shrunk.ok());
        QVERIFY2(shrunk.error().message.find("shrank") != std::string::npos, shrunk.error().message.c_str());
    }

    // A server that stops answering (a hung file system under the SFTP
    // server, a network that drops packets) fails the call within the
    // target's timeout and closes the connection; nothing waits for ever.
    void aServerThatStopsAnsweringFailsInTime()
    {
        SshTarget quick = target();
        quick.timeoutSeconds = 2;
        auto session = SshSession::connect(quick);
        QVERIFY(session.ok());
        const QString path = m_work.filePath(QStringLiteral("hung/events.jsonl"));
        QVERIFY(QDir().mkpath(m_work.filePath(QStringLiteral("hung"))));
        appendLine(path, runStartEvent());
        tb::metrics::EventFileReader reader(tb::remote::sftpEventSource(**session, path.toStdString()));
        QVERIFY(reader.poll().ok());
        appendLine(path, stepLine(1, 1500.0));
        const std::vector<pid_t> serving = m_server.connectionProcesses();
        QVERIFY(!serving.empty());
        for (const pid_t pid : serving)
            ::kill(pid, SIGSTOP);
        QElapsedTimer waited;
        waited.start();
        const auto hung = reader.poll();
        const qint64 milliseconds = waited.elapsed();
        for (const pid_t pid : serving)
            ::kill(pid, SIGCONT);
        QVERIFY(!hung.ok());
        QVERIFY2(hung.error().message.find("no answer within 2 s") != std::string::npos,
            hung.error().message.c_str());
        QVERIFY((*session)->timedOut());
        // The bound is the timeout, not a measurement: without the
        // watchdog this poll never returns.
        QVERIFY2(milliseconds < 20000, qPrintable(QString::number(milliseconds)));
        QVERIFY(!(*session)->run("true").ok()); // the connection is closed for good
    }

    // The probe over SSH answers as the same probe run here, and finds a
    // running trainer by its pid.
    void probesAHostOverSsh()
    {
        auto session = SshSession::connect(target());
        QVERIFY(session.ok());
        const auto here = tb::remote::probeLocalHost();
        QVERIFY2(here.ok(), here.ok() ? "" : here.error().message.c_str());
        const auto there = tb::remote::probeHost(**session);
        QVERIFY2(there.ok(), there.ok() ? "" : there.error().message.c_str());
        QCOMPARE(there->hostName, here->hostName);
        QCOMPARE(there->cpuCount, here->cpuCount);
        QVERIFY(there->memoryTotalBytes > 0 && there->memoryAvailableBytes > 0);
        QCOMPARE(there->memoryTotalBytes, here->memoryTotalBytes);
        if (QStandardPaths::findExecutable("nvidia-smi").isEmpty())
            QCOMPARE(there->gpuNote, std::string("nvidia-smi not found"));
    }

    // The probe over SSH lists a trainer running there by its pid and
    // command line.
    void probeFindsARunningTrainer()
    {
        if (const QString why = tb::test::whyNoEndlessRun(); !why.isEmpty())
            TB_SKIP(why);
        auto session = SshSession::connect(target());
        QVERIFY(session.ok());
        const QString config = m_work.filePath(QStringLiteral("probed.yaml"));
        QVERIFY(tb::test::writeEndlessRunConfig(config, m_work.filePath(QStringLiteral("probed"))));
        QProcess trainer;
        QVERIFY(tb::test::startTrainer(trainer, config));
        const long long pid = trainer.processId();
        // Exec'd once /proc shows its command line.
        QTRY_VERIFY_WITH_TIMEOUT(commandLineOf(pid).contains(config), 30000);
        const auto busy = tb::remote::probeHost(**session);
        trainer.kill();
        trainer.waitForFinished();
        QVERIFY(busy.ok());
        bool found = false;
        for (const auto& running : busy->trainers)
            found = found || (running.pid == pid && running.commandLine.find(config.toStdString()) != std::string::npos);
        QVERIFY2(found, "the running trainer was not listed with its pid and command line");
    }

    void monitorCommandOnce()
    {
        const QString run = m_work.filePath(QStringLiteral("once"));
        QVERIFY(QDir().mkpath(run));
        appendLine(run + "/events.jsonl", runStartEvent());
        appendLine(run + "/events.jsonl", stepLine(1, 1500.0));
        appendLine(run + "/events.jsonl", stepLine(2, 1500.0));
        for (const bool overSsh : {false, true}) {
            QStringList arguments{QStringLiteral("monitor"), run, QStringLiteral("--once")};
            if (overSsh)
                arguments << sshArguments();
            const CliRun result = cli(arguments);
            QVERIFY2(result.exitCode == 0, qPrintable(result.err));
            QVERIFY2(result.out.contains(QStringLiteral("run_start  remote-demo on somewhere")), qPrintable(result.out));
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
        appendLine(run + "/events.jsonl", runStartEvent());
        appendLine(run + "/events.jsonl", stepLine(1, 1500.0));
        const qint64 offset = QFileInfo(run + "/events.jsonl").size();
        appendLine(run + "/events.jsonl", stepLine(2, 1500.0));
        for (const bool overSsh : {false, true}) {
            QStringList arguments{QStringLiteral("monitor"), run, QStringLiteral("--once"), QStringLiteral("--from-offset"),
                QString::number(offset), QStringLiteral("--from-line"), QStringLiteral("3")};
            if (overSsh)
                arguments << sshArguments();
            const CliRun result = cli(arguments);
            QVERIFY2(result.exitCode == 0, qPrintable(result.err));
            QVERIFY2(!result.out.contains(QStringLiteral("run_start")) && !result.out.contains(QStringLiteral("step 1/")),
                qPrintable(result.out));
            QVERIFY2(result.out.contains(QStringLiteral("step 2/4  loss 2.8000")), qPrintable(result.out));
        }
    }

    void monitorCommandBadInput_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("expected");
        QTest::newRow("two folders") << QStringList{"a", "b"} << "expected one run folder or --run ID";
        QTest::newRow("folder and --run") << QStringList{"a", "--run", "x"} << "expected one run folder or --run ID";
        QTest::newRow("offset not a number") << QStringList{"run", "--from-offset", "x"} << "--from-offset";
        QTest::newRow("remote-cli without host") << QStringList{"--remote-cli", "/x"} << "--remote-cli needs --host";
        QTest::newRow("port without host") << QStringList{"run", "--port", "22"} << "--port needs --host";
        QTest::newRow("bad host") << QStringList{"run", "--host", "user@"} << "expected [USER@]HOST";
        QTest::newRow("bad port") << QStringList{"run", "--host", "h", "--port", "0"} << "--port";
        QTest::newRow("bad poll") << QStringList{"run", "--poll", "0"} << "--poll";
    }

    void monitorCommandBadInput()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, expected);
        const CliRun result = cli(QStringList{QStringLiteral("monitor")} + arguments);
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

        const CliRun result = cli(QStringList{QStringLiteral("monitor"), runDir, QStringLiteral("--stop"),
                                      QStringLiteral("--poll"), QStringLiteral("0.2")}
            + sshArguments());
        QVERIFY2(result.exitCode == 0, qPrintable(result.err + result.out));
        QVERIFY2(result.out.contains(QStringLiteral("stop       SIGTERM sent to process %1").arg(pid)),
            qPrintable(result.out));
        QVERIFY2(result.out.contains(QStringLiteral("run_end    stopped")), qPrintable(result.out));
        QVERIFY(trainer.waitForFinished(30000));
        const QStringList lines = result.out.split('\n');
        qInfo("monitor over SSH printed %lld lines and stopped pid %lld",
            static_cast<long long>(lines.size()), static_cast<long long>(pid));

        // Ended: a second stop is refused with the reason.
        const CliRun again = cli(QStringList{QStringLiteral("monitor"), runDir, QStringLiteral("--stop")}
            + sshArguments());
        QCOMPARE(again.exitCode, 0); // the run's own end status: stopped
        QVERIFY(again.out.contains(QStringLiteral("run_end    stopped")));
        QVERIFY(!again.out.contains(QStringLiteral("SIGTERM sent")));
        QVERIFY2(again.err.contains(QStringLiteral("nothing to stop, the run had already ended (stopped)")),
            qPrintable(again.err));
    }

    // `fetch` writes only inside the folder it fetches to, whatever the host
    // names (docs/MONITOR.md, "Fetching outputs"): the run folder there holds
    // adapter/adapter_config.json and adapter/sub/weights.bin, and each row
    // adds something hostile or awkward. A folder beside it, "outside", must
    // stay as it was, and nothing may appear beside the test's folders.
    void fetchStaysInsideItsFolder_data()
    {
        QTest::addColumn<QString>("twist");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        QTest::newRow("a tree with a symlink to a folder outside")
            << "remote-symlink" << 0 << "2 file(s) copied";
        QTest::newRow("a folder name holding a newline")
            << "newline" << 1 << "entry 'a\\x0a5 ..': holds a control character";
        QTest::newRow("a symlink here where the partial copy goes")
            << "local-symlink" << 1 << "cannot write";
        QTest::newRow("run folder with a trailing slash, default --to")
            << "trailing-slash" << 0 << "-> run/adapter";
        QTest::newRow("run folder ending in .., default --to")
            << "dotdot" << 2 << "cannot name a folder here";
    }

    void fetchStaysInsideItsFolder()
    {
        QFETCH(QString, twist);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        const QString base = m_work.filePath(QStringLiteral("fetch-%1").arg(++m_fetches));
        const QString run = base + "/remote/run";
        const QString outside = base + "/outside";
        const QString here = base + "/here";
        for (const QString& folder : {run + "/adapter/sub", outside, here})
            QVERIFY(QDir().mkpath(folder));
        appendLine(run + "/adapter/adapter_config.json", "{}");
        appendLine(run + "/adapter/sub/weights.bin", "0123456789");
        appendLine(outside + "/secret", "keep");
        QString runArgument = run;
        QStringList to{QStringLiteral("--to"), here + "/fetched"};
        if (twist == "remote-symlink")
            QVERIFY(QFile::link(outside, run + "/adapter/link"));
        if (twist == "newline") { // what `find -printf '%P\n'` would list as "5 ../x"
            QVERIFY(QDir().mkpath(run + "/adapter/a\n5 .."));
            appendLine(run + "/adapter/a\n5 ../x", "x");
        }
        if (twist == "local-symlink") {
            QVERIFY(QDir().mkpath(here + "/fetched/adapter"));
            QVERIFY(QFile::link(
                outside + "/secret", here + "/fetched/adapter/adapter_config.json.tbpart"));
        }
        if (twist == "trailing-slash" || twist == "dotdot") {
            runArgument = twist == "dotdot" ? run + "/adapter/.." : run + "/";
            to.clear();
        }
        const CliRun result = cli(QStringList{QStringLiteral("fetch"), runArgument,
                                      QStringLiteral("--what"), QStringLiteral("adapter")}
                + to + sshArguments(),
            120000, here);
        QVERIFY2(result.exitCode == exitCode, qPrintable(result.out + result.err));
        QVERIFY2((result.out + result.err).contains(message), qPrintable(result.out + result.err));

        const auto entries = [](const QString& folder) {
            return QDir(folder).entryList(
                QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System);
        };
        QCOMPARE(entries(base), (QStringList{"here", "outside", "remote"}));
        QCOMPARE(entries(outside), QStringList{"secret"});
        QFile secret(outside + "/secret");
        QVERIFY(secret.open(QIODevice::ReadOnly));
        QCOMPARE(secret.readAll(), QByteArray("keep\n"));
        if (twist == "newline" || twist == "dotdot")
            QCOMPARE(entries(here), QStringList{}); // refused before anything was written
        if (exitCode != 0)
            return;
        const QString fetched = here + (twist == "trailing-slash" ? "/run" : "/fetched");
        QFile weights(fetched + "/adapter/sub/weights.bin");
        QVERIFY(weights.open(QIODevice::ReadOnly));
        QCOMPARE(weights.readAll(), QByteArray("0123456789\n"));
        QCOMPARE(entries(fetched + "/adapter"), (QStringList{"adapter_config.json", "sub"}));
    }

    // A checksum's deadline is the SSH timeout plus its bytes at 50 MB/s
    // (review M2).
    void checksumDeadlineGrowsWithSize_data()
    {
        QTest::addColumn<double>("timeout");
        QTest::addColumn<qulonglong>("bytes");
        QTest::addColumn<double>("seconds");
        QTest::newRow("empty file") << 15.0 << qulonglong(0) << 15.0;
        QTest::newRow("256 MiB") << 15.0 << qulonglong(256) * 1024 * 1024 << 15.0 + 268435456 / 50e6;
        QTest::newRow("a 5 GB shard") << 15.0 << qulonglong(5'000'000'000) << 115.0;
        QTest::newRow("a 15 GB merged export, --ssh-timeout 2") << 2.0 << qulonglong(15'000'000'000) << 302.0;
    }

    void checksumDeadlineGrowsWithSize()
    {
        QFETCH(double, timeout);
        QFETCH(qulonglong, bytes);
        QFETCH(double, seconds);
        QCOMPARE(tb::remote::checksumSeconds(timeout, bytes), seconds);
    }

    // A remote sha256sum that answers 17 s after it is asked (a slow disk)
    // is waited for when its file is large enough to take that long at
    // 50 MB/s, where a fixed 15 s once failed every try; a small file's
    // checksum still fails at its own deadline, naming it and --ssh-timeout.
    void fetchWaitsForASlowChecksumOfALargeFile_data()
    {
        QTest::addColumn<int>("mebibytes");
        QTest::addColumn<QStringList>("options");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        QTest::newRow("256 MiB, default 15 s timeout: 20.4 s for the checksum")
            << 256 << QStringList{} << 0 << "adapter: 1 file(s) copied";
        QTest::newRow("1 MiB, --ssh-timeout 5: 5.02 s for the checksum")
            << 1 << QStringList{QStringLiteral("--ssh-timeout"), QStringLiteral("5")} << 1
            << "did not finish within 6 s (give more time with --ssh-timeout SECONDS)";
    }

    void fetchWaitsForASlowChecksumOfALargeFile()
    {
        QFETCH(int, mebibytes);
        QFETCH(QStringList, options);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        const QString base = m_work.filePath(QStringLiteral("slow-%1").arg(mebibytes));
        const QString weights = base + "/remote/adapter/weights.bin";
        QVERIFY(QDir().mkpath(base + "/remote/adapter"));
        QVERIFY(writeNoise(weights, mebibytes));
        QElapsedTimer waited;
        waited.start();
        const CliRun result = cli(QStringList{QStringLiteral("fetch"), base + "/remote", QStringLiteral("--what"),
                                      QStringLiteral("adapter"), QStringLiteral("--to"), base + "/here"}
                + sshArguments(m_slowHashServer) + options);
        qInfo("%d MiB: fetch ended in %lld ms", mebibytes, static_cast<long long>(waited.elapsed()));
        QVERIFY2(result.exitCode == exitCode, qPrintable(result.out + result.err));
        QVERIFY2((result.out + result.err).contains(message), qPrintable(result.out + result.err));
        if (exitCode == 0)
            QCOMPARE(tb::remote::localSha256((base + "/here/adapter/weights.bin").toStdString()).value(),
                tb::remote::localSha256(weights.toStdString()).value());
    }

    // --sync's check that a node already has a file waits for the slow
    // checksum of a large one too, and skips the copy.
    void syncWaitsForASlowChecksumOfALargeFile()
    {
        const QString weights = m_work.filePath(QStringLiteral("slow-sync.bin"));
        QVERIFY(writeNoise(weights, 256));
        SshTarget slow = target(m_slowHashServer);
        slow.timeoutSeconds = 15;
        auto session = SshSession::connect(slow);
        QVERIFY2(session.ok(), session.ok() ? "" : session.error().toString().c_str());
        const auto summary = tb::remote::uploadFiles(**session, {weights.toStdString()}, {});
        QVERIFY2(summary.ok(), summary.ok() ? "" : summary.error().toString().c_str());
        QCOMPARE(summary->skipped, 1);
        QCOMPARE(summary->copied, 0);
    }

    // A login shell whose start-up files print a banner on stdout and
    // stderr (review L7): a command's answer is its own output alone.
    void aStartupBannerLeavesCommandOutputAlone_data()
    {
        QTest::addColumn<QString>("command");
        QTest::addColumn<QString>("output");
        QTest::addColumn<QString>("errorOutput");
        QTest::newRow("both streams") << "echo out; echo err >&2; exit 3" << "out\n" << "err\n";
        QTest::newRow("nothing") << "true" << "" << "";
        QTest::newRow("no final newline") << "printf x" << "x" << "";
        QTest::newRow("the marker's text in the output") << "echo '--- tunebench output ---'"
                                                         << "--- tunebench output ---\n" << "";
    }

    void aStartupBannerLeavesCommandOutputAlone()
    {
        QFETCH(QString, command);
        QFETCH(QString, output);
        QFETCH(QString, errorOutput);
        auto session = SshSession::connect(target(m_bannerServer));
        QVERIFY2(session.ok(), session.ok() ? "" : session.error().toString().c_str());
        // The banner is there: a plain ssh command shows it.
        QProcess ssh;
        ssh.start(QStringLiteral("ssh"), {QStringLiteral("-p"), QString::number(m_bannerServer.port()),
            QStringLiteral("-i"), m_bannerServer.userKey(), QStringLiteral("-o"),
            QStringLiteral("UserKnownHostsFile=") + m_bannerServer.knownHosts(), QStringLiteral("-o"),
            QStringLiteral("BatchMode=yes"), m_bannerServer.user() + QStringLiteral("@127.0.0.1"), QStringLiteral("true")});
        QVERIFY(ssh.waitForFinished(20000));
        QVERIFY2(ssh.readAllStandardOutput().startsWith("Welcome to the test node"), "no banner: the test shows nothing");
        const auto result = (*session)->run(command.toStdString());
        QVERIFY(result.ok());
        QCOMPARE(QString::fromStdString(result->output), output);
        QCOMPARE(QString::fromStdString(result->errorOutput), errorOutput);
        QCOMPARE(result->exitStatus, command.contains("exit 3") ? 3 : 0);
    }

    // The CLI's remote answers through a shell that prints a banner: the
    // preflight's node facts and port checks, the run registry that
    // `monitor` lists and follows a run by, and `fetch`'s registry look-up
    // and SHA-256 checks.
    void cliReadsRemoteAnswersPastAStartupBanner()
    {
        const QString runDir = m_work.filePath(QStringLiteral("banner-run"));
        const QString config = m_work.filePath(QStringLiteral("banner.yaml"));
        QVERIFY(tb::test::writeEndlessRunConfig(config, runDir));
        const QString hostfile = m_work.filePath(QStringLiteral("banner-hosts"));
        appendLine(hostfile, QStringLiteral("%1@127.0.0.1:%2 slots=1").arg(m_bannerServer.user()).arg(m_bannerServer.port()).toStdString());
        const CliRun preflight = cli({QStringLiteral("launch"), config, QStringLiteral("--hostfile"), hostfile,
            QStringLiteral("--preflight-only"), QStringLiteral("--ssh-key"), m_bannerServer.userKey(),
            QStringLiteral("--known-hosts"), m_bannerServer.knownHosts()});
        QVERIFY2(preflight.exitCode == 0, qPrintable(preflight.err));
        QVERIFY2(preflight.err.contains(QStringLiteral("preflight passed on every node")), qPrintable(preflight.err));

        QVERIFY(QDir().mkpath(runDir + "/adapter"));
        appendLine(runDir + "/events.jsonl", runStartEvent());
        appendLine(runDir + "/events.jsonl", stepLine(1, 1500.0));
        appendLine(runDir + "/events.jsonl", stepLine(2, 1500.0));
        appendLine(runDir + "/adapter/adapter_config.json", "{}");
        tb::launch::RegistryEntry entry;
        entry.runId = "banner-1";
        entry.pid = 999999999;
        entry.config = config.toStdString();
        entry.runDir = runDir.toStdString();
        entry.state = "exited";
        entry.exitCode = 0;
        const std::string registry = m_bannerServer.home().toStdString() + "/.local/state/tunebench/runs";
        QVERIFY(tb::launch::writeRegistryEntry(tb::launch::registryEntryPath(registry, entry.runId, 0), entry).ok());

        const CliRun listed = cli(QStringList{QStringLiteral("monitor")} + sshArguments(m_bannerServer));
        QVERIFY2(listed.exitCode == 0, qPrintable(listed.err));
        QVERIFY2(listed.out.contains(QStringLiteral("banner-1")) && listed.out.contains(QStringLiteral("exit 0")),
            qPrintable(listed.out));
        const CliRun followed = cli(QStringList{QStringLiteral("monitor"), QStringLiteral("--run"), QStringLiteral("banner-1"),
                                        QStringLiteral("--once")}
            + sshArguments(m_bannerServer));
        QVERIFY2(followed.exitCode == 0, qPrintable(followed.err));
        QVERIFY2(followed.out.contains(QStringLiteral("step 2/4  loss 2.8000")), qPrintable(followed.out));
        const QString here = m_work.filePath(QStringLiteral("banner-fetched"));
        const CliRun fetched = cli(QStringList{QStringLiteral("fetch"), QStringLiteral("--run"), QStringLiteral("banner-1"),
                                       QStringLiteral("--what"), QStringLiteral("adapter"), QStringLiteral("--to"), here}
            + sshArguments(m_bannerServer));
        QVERIFY2(fetched.exitCode == 0, qPrintable(fetched.out + fetched.err));
        QFile copied(here + "/adapter/adapter_config.json");
        QVERIFY(copied.open(QIODevice::ReadOnly));
        QCOMPARE(copied.readAll(), QByteArray("{}\n"));
    }

    // Thousands of unreachable nodes (TEST-NET addresses, each with a port
    // of its own): the preflight checks at most 32 at once, each with its
    // session's watchdog, and ends in one orderly error naming every node,
    // where a thread and a socket per node once ran out (review L8).
    void preflightOfThousandsOfUnreachableNodesIsBounded()
    {
        constexpr int kNodes = 2000;
        const QString config = m_work.filePath(QStringLiteral("many.yaml"));
        QVERIFY(tb::test::writeEndlessRunConfig(config, m_work.filePath(QStringLiteral("many-run"))));
        tb::remote::ClusterOptions options;
        options.configPath = config.toStdString();
        options.remoteCli = "/nonexistent/tunebench-cli";
        options.identityFile = m_server.userKey().toStdString();
        options.knownHostsFile = m_server.knownHosts().toStdString();
        options.sshTimeoutSeconds = 0.3;
        for (int i = 0; i < kNodes; ++i) {
            tb::launch::HostSlots host;
            host.host = (i % 2 ? "198.51.100." : "192.0.2.") + std::to_string(1 + (i / 2) % 254);
            host.port = 1000 + i;
            host.slotIndices = {0};
            host.line = i + 1;
            options.hosts.push_back(host);
        }
        tb::remote::ClusterLaunch cluster(options);
        FailureCounter sink;
        std::atomic<bool> sampling{true};
        std::atomic<int> peak{0};
        std::thread sampler([&] {
            while (sampling) {
                peak = std::max(peak.load(), threadCount());
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        });
        const int before = threadCount();
        QElapsedTimer waited;
        waited.start();
        const tb::common::Status checked = cluster.preflight(sink);
        const qint64 milliseconds = waited.elapsed();
        sampling = false;
        sampler.join();
        qInfo("%d unreachable nodes: preflight ended in %lld ms, at most %d threads (%d before)", kNodes,
            static_cast<long long>(milliseconds), peak.load(), before);
        QVERIFY(!checked.ok());
        QVERIFY2(checked.error().message.starts_with("preflight found 2000 problem(s); nothing was started"),
            checked.error().message.substr(0, 300).c_str());
        QCOMPARE(sink.failed, kNodes);
        QCOMPARE(int(sink.problems.size()), kNodes);
        QVERIFY2(peak - before <= 2 * 32 + 4, qPrintable(QString::number(peak - before)));
        QVERIFY2(milliseconds < 60000, qPrintable(QString::number(milliseconds)));
    }

private:
    // A sha256sum that answers 17 s after it is asked, as over a slow disk:
    // longer than the default SSH timeout, shorter than a 256 MiB file's
    // checksum deadline.
    static bool writeSlowSha256sum(const QString& folder)
    {
        QFile script(folder + "/sha256sum");
        if (!QDir().mkpath(folder) || !script.open(QIODevice::WriteOnly))
            return false;
        script.write("#!/bin/sh\nsleep 17 &\nhash=$(/usr/bin/sha256sum \"$@\") || exit 1\nwait\n"
                     "printf '%s\\n' \"$hash\"\n");
        script.close();
        return script.setPermissions(script.permissions() | QFileDevice::ExeOwner);
    }

    // `mebibytes` MiB of pseudo-random bytes.
    static bool writeNoise(const QString& path, int mebibytes)
    {
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly))
            return false;
        std::mt19937_64 random(42);
        std::vector<uint64_t> block(1 << 17);
        for (int i = 0; i < mebibytes; ++i) {
            for (uint64_t& word : block)
                word = random();
            const auto bytes = qint64(block.size() * sizeof(uint64_t));
            if (file.write(reinterpret_cast<const char*>(block.data()), bytes) != bytes)
                return false;
        }
        return true;
    }

    // Counts the nodes whose preflight failed.
    struct FailureCounter : tb::remote::ClusterSink {
        int failed = 0;
        std::vector<std::string> problems;
        void nodeState(const tb::remote::NodeUpdate& update) override
        {
            failed += update.state == tb::remote::NodeState::CheckFailed;
        }
        void preflightFailed(const std::vector<std::string>& all) override { problems = all; }
        void runEvent(const tb::metrics::Event&, const tb::metrics::RunHistory&) override {}
        void note(const std::string&) override {}
        void transferProgress(int, const std::string&, const tb::remote::TransferProgress&) override {}
    };

    // This process's threads, as /proc says.
    static int threadCount()
    {
        QFile status(QStringLiteral("/proc/self/status"));
        if (!status.open(QIODevice::ReadOnly))
            return -1;
        for (const QByteArray& line : status.readAll().split('\n')) {
            if (line.startsWith("Threads:"))
                return line.mid(8).trimmed().toInt();
        }
        return -1;
    }

    SshTarget target() const { return target(m_server); }

    static SshTarget target(const tb::test::SshdServer& server) { return tb::test::loginTarget(server); }

    QStringList sshArguments() const { return sshArguments(m_server); }

    static QStringList sshArguments(const tb::test::SshdServer& server)
    {
        return {QStringLiteral("--host"), server.user() + QStringLiteral("@127.0.0.1"), QStringLiteral("--port"),
            QString::number(server.port()), QStringLiteral("--identity"), server.userKey(),
            QStringLiteral("--known-hosts"), server.knownHosts()};
    }

    tb::test::SshdServer m_server;
    tb::test::SshdServer m_bannerServer;
    tb::test::SshdServer m_slowHashServer; // its sha256sum answers after 17 s
    QTemporaryDir m_work;
    int m_fetches = 0;
};

QTEST_GUILESS_MAIN(TestRemote)
#include "test_remote.moc"
