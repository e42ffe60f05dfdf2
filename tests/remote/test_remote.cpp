// core/remote against a real OpenSSH sshd on loopback: commands, host-key
// and key checks, an event file followed over SFTP, a host that stops
// answering, the socket's keepalive, a connect to one that never answers, the host probe, a login
// shell that prints a banner, and a preflight of thousands of unreachable nodes. `monitor` is in
// test_remote_monitor, `fetch` and --sync's copies in test_remote_transfer.
#include "../support/endless_run.h"
#include "../support/event_lines.h"
#include "process_facts.h"
#include "remote_cli.h"
#include "silent_port.h"

#include "launch/run_registry.h"
#include "launch/text_quote.h"
#include "metrics/event.h"
#include "metrics/event_file_reader.h"
#include "metrics/step_record.h"
#include "remote/cluster_launch.h"
#include "remote/host_probe.h"
#include "remote/remote_event_feed.h"
#include "remote/sftp_event_source.h"
#include "remote/ssh_session.h"

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QtTest>

#include <atomic>
#include <csignal>
#include <memory>
#include <thread>

using tb::remote::SshSession;
using tb::remote::SshTarget;
using tb::test::appendLine;
using tb::test::CliRun;
using tb::test::commandLineOf;
using tb::test::runCli;
using tb::test::socketOption;
using tb::test::socketsTo;
using tb::test::stepLine;

class TestRemote : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        const QString failure = m_server.start();
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        const QString bannerFailure = m_bannerServer.start(true);
        QVERIFY2(bannerFailure.isEmpty(), qPrintable(bannerFailure));
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
        const auto quoted =
            (*session)->run("printf %s " + tb::launch::shellQuote("it's a 'test' $HOME"));
        QVERIFY(quoted.ok());
        QCOMPARE(quoted->output, std::string("it's a 'test' $HOME"));
    }

    void refusals_data()
    {
        QTest::addColumn<QString>("problem");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("unknown host key")
            << "unknown"
            << QStringList{"host key SHA256:", "is not in",
                   "ssh-keygen -F '[127.0.0.1]:", "Only if they match",
                   "ssh -o UserKnownHostsFile="};
        QTest::newRow("changed host key")
            << "changed" << QStringList{"the host key changed", "refusing to connect"};
        QTest::newRow("key not authorized") << "key" << QStringList{"was not accepted"};
        QTest::newRow("missing identity file")
            << "no-key" << QStringList{"identity file", "cannot read"};
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
        tb::metrics::EventFileReader reader(
            tb::remote::sftpEventSource(**session, path.toStdString()));
        auto nothing = reader.poll();
        QVERIFY2(nothing.ok(), nothing.ok() ? "" : nothing.error().toString().c_str());
        QVERIFY(nothing->empty()); // not written yet: not an error
        QVERIFY(QDir().mkpath(m_work.filePath(QStringLiteral("sftp"))));
        appendLine(path, tb::test::remoteRunStartEvent());
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
        QVERIFY2(QString::fromStdString((*second)[1].error)
                     .startsWith(QStringLiteral("127.0.0.1:") + path + ":4:"),
            (*second)[1].error.c_str());
        QFile::resize(path, 10);
        const auto shrunk = reader.poll();
        QVERIFY(!shrunk.ok());
        QVERIFY2(shrunk.error().message.find("shrank") != std::string::npos,
            shrunk.error().message.c_str());
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
        appendLine(path, tb::test::remoteRunStartEvent());
        tb::metrics::EventFileReader reader(
            tb::remote::sftpEventSource(**session, path.toStdString()));
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

    // A peer that vanishes without a word (a host powered off, a network
    // partition) is noticed by the kernel: the connection's socket sends
    // keepalive probes after the target's timeout of silence and gives up
    // on unacknowledged data after twice that (libssh 0.10 ignores
    // ServerAliveInterval and TCPKeepAlive, review H3).
    void theKernelNoticesAPeerThatVanished()
    {
        const std::set<int> before = socketsTo(m_server.port());
        SshTarget three = target();
        three.timeoutSeconds = 3;
        auto session = SshSession::connect(three);
        QVERIFY(session.ok());
        std::set<int> made = socketsTo(m_server.port());
        for (const int fd : before)
            made.erase(fd);
        QCOMPARE(made.size(), size_t(1));
        const int fd = *made.begin();
        QCOMPARE(socketOption(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
        QCOMPARE(socketOption(fd, IPPROTO_TCP, TCP_KEEPIDLE), 3);
        QCOMPARE(socketOption(fd, IPPROTO_TCP, TCP_KEEPINTVL), 3);
        QCOMPARE(socketOption(fd, IPPROTO_TCP, TCP_KEEPCNT), 3);
        QCOMPARE(socketOption(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 6000);
    }

    // A host that takes the connection and never answers, with a minute's
    // timeout: interrupt() ends the connect under way at once, and so does
    // destroying an event feed whose thread is connecting (the multi-node
    // launch's, at its end), where both once waited out the timeout. The
    // bounds are the timeout, not measurements.
    void aConnectUnderWayEndsOnInterrupt()
    {
        const tb::test::SilentPort silent;
        QVERIFY(silent.port() > 0);
        SshTarget mute = target();
        mute.port = silent.port();
        mute.timeoutSeconds = 60;
        auto session = SshSession::prepare(mute);
        QVERIFY(session.ok());
        std::thread interrupter([&session] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            (*session)->interrupt();
        });
        QElapsedTimer waited;
        waited.start();
        const tb::common::Status opened = (*session)->open();
        const qint64 milliseconds = waited.elapsed();
        interrupter.join();
        QVERIFY(!opened.ok());
        QVERIFY2(opened.error().message.find("cannot connect: interrupted") != std::string::npos,
            opened.error().message.c_str());
        QVERIFY2(milliseconds < 30000, qPrintable(QString::number(milliseconds)));

        auto feed = std::make_unique<tb::remote::RemoteEventFeed>(
            mute, "/nonexistent/events.jsonl", 0, 1, std::chrono::milliseconds(100));
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        QVERIFY(feed->take().empty()); // still connecting: no problem to report yet
        waited.restart();
        feed.reset();
        QVERIFY2(waited.elapsed() < 30000, qPrintable(QString::number(waited.elapsed())));
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
        // tunebench-cli execs the trainer in the same process: probe once
        // /proc shows the trainer's command line, not the CLI's, which names
        // the config too (a slow start, under a sanitizer, probed between).
        const auto isTrainer = [&] {
            const QString line = commandLineOf(pid);
            return line.contains(QStringLiteral("tunebench-trainer train "))
                && line.contains(config);
        };
        QTRY_VERIFY_WITH_TIMEOUT(isTrainer(), 30000);
        const auto busy = tb::remote::probeHost(**session);
        trainer.kill();
        trainer.waitForFinished();
        QVERIFY(busy.ok());
        bool found = false;
        for (const auto& running : busy->trainers)
            found = found
                || (running.pid == pid
                    && running.commandLine.find(config.toStdString()) != std::string::npos);
        QVERIFY2(found, "the running trainer was not listed with its pid and command line");
    }

    // A login shell whose start-up files print a banner on stdout and
    // stderr (review L7): a command's answer is its own output alone.
    void aStartupBannerLeavesCommandOutputAlone_data()
    {
        QTest::addColumn<QString>("command");
        QTest::addColumn<QString>("output");
        QTest::addColumn<QString>("errorOutput");
        QTest::newRow("both streams") << "echo out; echo err >&2; exit 3"
                                      << "out\n"
                                      << "err\n";
        QTest::newRow("nothing") << "true"
                                 << ""
                                 << "";
        QTest::newRow("no final newline") << "printf x"
                                          << "x"
                                          << "";
        QTest::newRow("the marker's text in the output") << "echo '--- tunebench output ---'"
                                                         << "--- tunebench output ---\n"
                                                         << "";
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
        ssh.start(QStringLiteral("ssh"),
            {QStringLiteral("-p"), QString::number(m_bannerServer.port()), QStringLiteral("-i"),
                m_bannerServer.userKey(), QStringLiteral("-o"),
                QStringLiteral("UserKnownHostsFile=") + m_bannerServer.knownHosts(),
                QStringLiteral("-o"), QStringLiteral("BatchMode=yes"),
                m_bannerServer.user() + QStringLiteral("@127.0.0.1"), QStringLiteral("true")});
        QVERIFY(ssh.waitForFinished(20000));
        QVERIFY2(ssh.readAllStandardOutput().startsWith("Welcome to the test node"),
            "no banner: the test shows nothing");
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
        appendLine(hostfile,
            QStringLiteral("%1@127.0.0.1:%2 slots=1")
                .arg(m_bannerServer.user())
                .arg(m_bannerServer.port())
                .toStdString());
        const CliRun preflight = runCli({QStringLiteral("launch"), config,
            QStringLiteral("--hostfile"), hostfile, QStringLiteral("--preflight-only"),
            QStringLiteral("--ssh-key"), m_bannerServer.userKey(), QStringLiteral("--known-hosts"),
            m_bannerServer.knownHosts()});
        QVERIFY2(preflight.exitCode == 0, qPrintable(preflight.err));
        QVERIFY2(preflight.err.contains(QStringLiteral("preflight passed on every node")),
            qPrintable(preflight.err));

        QVERIFY(QDir().mkpath(runDir + "/adapter"));
        appendLine(runDir + "/events.jsonl", tb::test::remoteRunStartEvent());
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
        const std::string registry =
            m_bannerServer.home().toStdString() + "/.local/state/tunebench/runs";
        QVERIFY(tb::launch::writeRegistryEntry(
            tb::launch::registryEntryPath(registry, entry.runId, 0), entry)
                    .ok());

        const CliRun listed = runCli(
            QStringList{QStringLiteral("monitor")} + tb::test::cliSshArguments(m_bannerServer));
        QVERIFY2(listed.exitCode == 0, qPrintable(listed.err));
        QVERIFY2(listed.out.contains(QStringLiteral("banner-1"))
                && listed.out.contains(QStringLiteral("exit 0")),
            qPrintable(listed.out));
        const CliRun followed =
            runCli(QStringList{QStringLiteral("monitor"), QStringLiteral("--run"),
                       QStringLiteral("banner-1"), QStringLiteral("--once")}
                + tb::test::cliSshArguments(m_bannerServer));
        QVERIFY2(followed.exitCode == 0, qPrintable(followed.err));
        QVERIFY2(followed.out.contains(QStringLiteral("step 2/4  loss 2.8000")),
            qPrintable(followed.out));
        const QString here = m_work.filePath(QStringLiteral("banner-fetched"));
        const CliRun fetched = runCli(QStringList{QStringLiteral("fetch"), QStringLiteral("--run"),
                                          QStringLiteral("banner-1"), QStringLiteral("--what"),
                                          QStringLiteral("adapter"), QStringLiteral("--to"), here}
            + tb::test::cliSshArguments(m_bannerServer));
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
        QVERIFY(
            tb::test::writeEndlessRunConfig(config, m_work.filePath(QStringLiteral("many-run"))));
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
        qInfo("%d unreachable nodes: preflight ended in %lld ms, at most %d threads (%d before)",
            kNodes, static_cast<long long>(milliseconds), peak.load(), before);
        QVERIFY(!checked.ok());
        QVERIFY2(checked.error().message.starts_with(
                     "preflight found 2000 problem(s); nothing was started"),
            checked.error().message.substr(0, 300).c_str());
        QCOMPARE(sink.failed, kNodes);
        QCOMPARE(int(sink.problems.size()), kNodes);
        QVERIFY2(peak - before <= 2 * 32 + 4, qPrintable(QString::number(peak - before)));
        QVERIFY2(milliseconds < 60000, qPrintable(QString::number(milliseconds)));
    }

private:
    // Counts the nodes whose preflight failed.
    struct FailureCounter : tb::remote::ClusterSink {
        int failed = 0;
        std::vector<std::string> problems;
        void nodeState(const tb::remote::NodeUpdate& update) override
        {
            failed += update.state == tb::remote::NodeState::CheckFailed;
        }
        void preflightFailed(const std::vector<std::string>& all) override { problems = all; }
        void runEvent(const tb::metrics::Event&, const tb::metrics::RunHistory&) override { }
        void note(const std::string&) override { }
        void transferProgress(int, const std::string&, const tb::remote::TransferProgress&) override
        {
        }
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

    static SshTarget target(const tb::test::SshdServer& server)
    {
        return tb::test::loginTarget(server);
    }

    tb::test::SshdServer m_server;
    tb::test::SshdServer m_bannerServer;
    QTemporaryDir m_work;
};

QTEST_GUILESS_MAIN(TestRemote)
#include "test_remote.moc"
