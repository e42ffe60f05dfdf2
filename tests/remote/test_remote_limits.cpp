// What a host or a run folder sends is bounded (review M5, L9): `monitor`
// over a file of a few hundred MB of unreadable lines, a remote command that
// prints without end, and the multi-node follower when rank 0's events
// cannot be read; each against the real tunebench-cli or a real OpenSSH
// sshd on loopback.
#include "../support/child_usage.h"
#include "../support/event_lines.h"
#include "remote_cli.h"

#include "launch/run_registry.h"
#include "metrics/event.h"
#include "remote/cluster_launch.h"

#include <QFile>
#include <QtTest>

using tb::test::appendLine;
using tb::test::stepLine;

namespace {

const QString kCli = tb::test::qBuildPath("app/cli/tunebench-cli");

// What the follower under test told its sink.
struct RecordingSink : tb::remote::ClusterSink {
    std::vector<std::string> notes;
    std::vector<int64_t> steps;
    void nodeState(const tb::remote::NodeUpdate&) override { }
    void preflightFailed(const std::vector<std::string>&) override { }
    void runEvent(const tb::metrics::Event& event, const tb::metrics::RunHistory&) override
    {
        if (event.type == tb::metrics::EventType::Step)
            steps.push_back(event.body.value("step", int64_t(-1)));
    }
    void note(const std::string& line) override { notes.push_back(line); }
    void transferProgress(int, const std::string&, const tb::remote::TransferProgress&) override { }

    int notesContaining(const std::string& text) const
    {
        return int(std::count_if(notes.begin(), notes.end(),
            [&](const std::string& n) { return n.find(text) != n.npos; }));
    }
};

std::string runStartLine()
{
    return tb::metrics::makeEvent(tb::metrics::EventType::RunStart, 0, 1.0e9,
        {{"run_id", "limits"}, {"world_size", 1}, {"config", nlohmann::json::object()},
            {"total_steps", 4}})
        .dump();
}

} // namespace

class TestRemoteLimits : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_work.isValid());
        const QString failure = m_server.start(true); // a home of its own: its run registry
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }

    // 256 MiB of lines that are not events (an unterminated string, whose
    // JSON error quotes it): read 4 MiB at a time, each error cut to 1 KiB,
    // the latest 1,000 kept. Before, every line's item and message stayed
    // (about 600 MB here).
    void monitorOnceOverAHugeFileOfBadLinesStaysSmall()
    {
        constexpr qint64 kFileBytes = qint64(256) << 20;
        constexpr long kRssBoundKib = 128 * 1024;
        const QString runDir = m_work.filePath(QStringLiteral("bad-lines"));
        QVERIFY(QDir().mkpath(runDir));
        QFile events(runDir + "/events.jsonl");
        QVERIFY(events.open(QIODevice::WriteOnly));
        const QByteArray line = '"' + QByteArray(1022, 'a') + '\n';
        QByteArray chunk;
        while (chunk.size() < (4 << 20))
            chunk += line;
        for (qint64 written = 0; written < kFileBytes; written += chunk.size())
            QCOMPARE(events.write(chunk), chunk.size());
        events.close();
        const qint64 lines = events.size() / line.size();

        const tb::test::MeasuredRun run = tb::test::runMeasured(
            kCli, {QStringLiteral("monitor"), runDir, QStringLiteral("--once")});
        qInfo("monitor --once over %lld MiB (%lld unreadable lines): exit %d, peak RSS %ld KiB",
            events.size() >> 20, lines, run.exitCode, run.maxRssKib);
        QVERIFY(QFile::remove(events.fileName()));
        QVERIFY2(!run.timedOut, qPrintable(run.err));
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.err.contains(QStringLiteral("no run_start")) || run.err.isEmpty(),
            qPrintable(run.err));
        QVERIFY2(run.maxRssKib > 0 && run.maxRssKib < kRssBoundKib,
            qPrintable(QString::number(run.maxRssKib)));
    }

    // A host whose command prints without end (here `yes`, as a hostile
    // host or a `find` over millions of files would): the answer is cut at
    // 64 MiB with an error naming the host and the command, and the channel
    // closed; before, it was read until the 15 s deadline, gigabytes.
    void aCommandThatPrintsWithoutEndGetsAnError()
    {
        constexpr long kRssBoundKib = 200 * 1024;
        const QString flood = m_work.filePath(QStringLiteral("flood"));
        QFile script(flood);
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write("#!/bin/sh\nexec yes 'a line of a command that does not stop printing'\n");
        script.close();
        QVERIFY(script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));

        const tb::test::MeasuredRun run = tb::test::runMeasured(kCli,
            QStringList{QStringLiteral("monitor"), QStringLiteral("--remote-cli"), flood}
                + tb::test::cliSshArguments(m_server));
        qInfo("a remote command printing without end: exit %d, peak RSS %ld KiB", run.exitCode,
            run.maxRssKib);
        QVERIFY2(!run.timedOut, qPrintable(run.err));
        QCOMPARE(run.exitCode, 2);
        for (const QString& part : {QStringLiteral("@127.0.0.1:%1").arg(m_server.port()), flood,
                 QStringLiteral("printed more than 64 MiB")})
            QVERIFY2(run.err.contains(part), qPrintable(run.err));
        QVERIFY2(run.maxRssKib < kRssBoundKib, qPrintable(QString::number(run.maxRssKib)));
    }

    // Rank 0's events below the offset the follower goes on from (the file
    // was cut, or replaced): said once, naming the file, however many polls
    // fail; once the file has grown past it again, the events go on from
    // there. Before, every error was dropped without a word (review L9).
    void followerSaysOnceWhenRank0sEventsCannotBeRead()
    {
        const QString runDir = m_work.filePath(QStringLiteral("followed"));
        const QString events = runDir + "/events.jsonl";
        QVERIFY(QDir().mkpath(runDir));
        appendLine(events, runStartLine());
        appendLine(events, stepLine(1, 1500.0));
        const uint64_t wanted = uint64_t(QFileInfo(events).size() + stepLine(2, 1500.0).size() + 1);
        writeExitedEntry("limits-1", runDir);

        tb::remote::ClusterLaunch cluster(clusterOptions("limits-1"));
        RecordingSink sink;
        QVERIFY(cluster.attach(sink, wanted, 4).ok());
        const tb::launch::CancelToken cancel, detach;
        QVERIFY(cluster.follow(sink, cancel, detach, false)
                    .ok()); // two polls: in the loop and at the end
        QVERIFY(cluster.follow(sink, cancel, detach, false).ok());
        QCOMPARE(sink.notesContaining("cannot read rank 0's events"), 1);
        QVERIFY2(sink.notesContaining(events.toStdString() + ": the file shrank") == 1,
            sink.notes.back().c_str());
        QVERIFY(sink.steps.empty());

        appendLine(events, stepLine(2, 1500.0));
        appendLine(events, stepLine(3, 1500.0));
        QVERIFY(cluster.follow(sink, cancel, detach, false).ok());
        QCOMPARE(sink.steps, std::vector<int64_t>{3});
        QCOMPARE(sink.notesContaining("cannot read rank 0's events"), 1);
    }

private:
    void writeExitedEntry(const std::string& runId, const QString& runDir)
    {
        tb::launch::RegistryEntry entry;
        entry.runId = runId;
        entry.pid = 999999999;
        entry.runDir = runDir.toStdString();
        entry.state = "exited";
        entry.exitCode = 0;
        const std::string registry = m_server.home().toStdString() + "/.local/state/tunebench/runs";
        QVERIFY(tb::launch::makeRegistryDir(registry).ok());
        QVERIFY(
            tb::launch::writeRegistryEntry(tb::launch::registryEntryPath(registry, runId, 0), entry)
                .ok());
    }

    tb::remote::ClusterOptions clusterOptions(const std::string& runId) const
    {
        tb::remote::ClusterOptions options;
        tb::launch::HostSlots host;
        host.user = m_server.user().toStdString();
        host.host = "127.0.0.1";
        host.port = m_server.port();
        host.slotIndices = {0};
        host.line = 1;
        options.hosts = {host};
        options.remoteCli = kCli.toStdString();
        options.identityFile = m_server.userKey().toStdString();
        options.knownHostsFile = m_server.knownHosts().toStdString();
        options.runId = runId;
        options.pollSeconds = 0.05;
        options.sshTimeoutSeconds = 10;
        return options;
    }

    tb::test::SshdServer m_server;
    QTemporaryDir m_work;
};

QTEST_GUILESS_MAIN(TestRemoteLimits)
#include "test_remote_limits.moc"
