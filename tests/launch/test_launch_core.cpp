#include "../support/test_paths.h"
#include "launch/cancel_token.h"
#include "launch/exit_status.h"
#include "launch/line_splitter.h"
#include "launch/local_launcher.h"
#include "launch/run_registry.h"
#include "launch/world_layout.h"

#include <QtTest>

#include <atomic>
#include <thread>

#include <cerrno>
#include <csignal>
#include <dirent.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

// tb::launch in-process: the pieces (lines, statuses, layouts; ports are in
// test_free_port) and runLocalLaunch() driven with the fake trainer and
// cancelled through its token, checking that nothing is left behind (no
// child, no descriptor).
using namespace tb::launch;

namespace {

int openFdCount()
{
    DIR* dir = opendir("/proc/self/fd");
    if (!dir)
        return -1;
    int count = 0;
    while (const dirent* entry = readdir(dir)) {
        if (entry->d_name[0] != '.')
            ++count;
    }
    closedir(dir);
    return count - 1;
}

bool noChildLeft()
{
    int status = 0;
    return waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD;
}

struct Line {
    int rank;
    OutputStream stream;
    std::string text;
};

// Collects what the launcher reports; cancels the token after `cancelAfter`
// lines containing `cancelOn`, the way a GUI's stop button would.
class RecordingSink : public LaunchSink {
public:
    std::vector<Line> lines;
    std::vector<int> started;
    std::vector<std::pair<int, ExitStatus>> exited;
    CancelToken* cancel = nullptr;
    std::string cancelOn;
    int cancelAfter = 0;

    void rankStarted(int rank, int) override { started.push_back(rank); }
    void rankOutput(int rank, OutputStream stream, std::string_view line) override
    {
        lines.push_back({rank, stream, std::string(line)});
        if (cancel && !cancelOn.empty() && line.find(cancelOn) != std::string_view::npos
            && --cancelAfter == 0)
            cancel->cancel();
    }
    void rankExited(int rank, const ExitStatus& status) override
    {
        exited.emplace_back(rank, status);
    }
    int count(std::string_view needle) const
    {
        return int(std::count_if(lines.begin(), lines.end(),
            [&](const Line& line) { return line.text.find(needle) != std::string::npos; }));
    }
};

LaunchOptions fakeOptions(int nproc, std::vector<std::string> args)
{
    LaunchOptions options;
    options.program = tb::test::fakeTrainerProgram();
    options.arguments = {"train", "run.yaml"};
    options.arguments.insert(options.arguments.end(), args.begin(), args.end());
    options.layout.nprocPerNode = nproc;
    options.graceSeconds = 5;
    return options;
}

} // namespace

class TestLaunchCore : public QObject {
    Q_OBJECT

private slots:
    void lineSplitter_data()
    {
        QTest::addColumn<QStringList>("chunks");
        QTest::addColumn<int>("maxLineBytes");
        QTest::addColumn<QStringList>("lines");
        QTest::addRow("one line") << QStringList{"hello\n"} << 100 << QStringList{"hello"};
        QTest::addRow("split across chunks") << QStringList{"hel", "lo wo", "rld\nnext"} << 100
                                             << QStringList{"hello world", "next"};
        QTest::addRow("many in one chunk")
            << QStringList{"a\nb\n\nc\n"} << 100 << QStringList{"a", "b", "", "c"};
        QTest::addRow("crlf") << QStringList{"dos\r", "\nline\r\n"} << 100
                              << QStringList{"dos", "line"};
        QTest::addRow("cut at the limit")
            << QStringList{"abcdefghij"} << 4 << QStringList{"abcd", "efgh", "ij"};
        QTest::addRow("limit then newline")
            << QStringList{"abcd\nef"} << 4 << QStringList{"abcd", "", "ef"};
        QTest::addRow("unterminated tail") << QStringList{"tail"} << 100 << QStringList{"tail"};
        QTest::addRow("nothing") << QStringList{} << 100 << QStringList{};
    }
    void lineSplitter()
    {
        QFETCH(QStringList, chunks);
        QFETCH(int, maxLineBytes);
        QFETCH(QStringList, lines);
        LineSplitter splitter{size_t(maxLineBytes)};
        QStringList got;
        const auto collect = [&](std::string_view line) {
            got << QString::fromStdString(std::string(line));
        };
        for (const QString& chunk : chunks)
            splitter.append(chunk.toStdString(), collect);
        splitter.finish(collect);
        QCOMPARE(got, lines);
        QCOMPARE(splitter.pendingBytes(), size_t(0));
    }

    void exitStatusText_data()
    {
        QTest::addColumn<int>("waitStatus");
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("shellStatus");
        QTest::addRow("success") << 0 << "exit status 0" << 0;
        QTest::addRow("exit 3") << (3 << 8) << "exit status 3" << 3;
        QTest::addRow("SIGABRT") << SIGABRT << "signal 6 (SIGABRT)" << 134;
        QTest::addRow("SIGKILL") << SIGKILL << "signal 9 (SIGKILL)" << 137;
        QTest::addRow("SIGSEGV core")
            << (SIGSEGV | 0x80) << "signal 11 (SIGSEGV, core dumped)" << 139;
    }
    void exitStatusText()
    {
        QFETCH(int, waitStatus);
        QFETCH(QString, text);
        QFETCH(int, shellStatus);
        const ExitStatus status = ExitStatus::fromWaitStatus(waitStatus);
        QCOMPARE(QString::fromStdString(status.toString()), text);
        QCOMPARE(status.shellStatus(), shellStatus);
        QCOMPARE(status.isSuccess(), waitStatus == 0);
    }

    // A rank's default intra-op threads: the launcher's OMP_NUM_THREADS
    // wins; else the node's usable CPUs shared by its ranks. -1: refused.
    void rankComputeThreads_data()
    {
        QTest::addColumn<QString>("omp"); // "<unset>": no such variable
        QTest::addColumn<int>("cpus");
        QTest::addColumn<int>("localRanks");
        QTest::addColumn<int>("expected");
        QTest::addRow("one process, every cpu") << "<unset>" << 16 << 1 << 16;
        QTest::addRow("4 ranks share 16 cpus") << "<unset>" << 16 << 4 << 4;
        QTest::addRow("more ranks than cpus") << "<unset>" << 2 << 8 << 1;
        QTest::addRow("uneven share rounds down") << "<unset>" << 10 << 4 << 2;
        QTest::addRow("launcher's value wins") << "3" << 16 << 4 << 3;
        QTest::addRow("launcher's value above the share") << "12" << 16 << 4 << 12;
        QTest::addRow("nested list: the outer level") << "6,2" << 16 << 1 << 6;
        QTest::addRow("zero") << "0" << 16 << 1 << -1;
        QTest::addRow("negative") << "-2" << 16 << 1 << -1;
        QTest::addRow("not a number") << "four" << 16 << 1 << -1;
        QTest::addRow("trailing text") << "4x" << 16 << 1 << -1;
        QTest::addRow("empty") << "" << 16 << 1 << -1;
    }
    void rankComputeThreads()
    {
        QFETCH(QString, omp);
        QFETCH(int, cpus);
        QFETCH(int, localRanks);
        QFETCH(int, expected);
        const std::optional<std::string> value =
            omp == "<unset>" ? std::nullopt : std::optional<std::string>(omp.toStdString());
        const auto threads = tb::launch::rankComputeThreads(value, cpus, localRanks);
        if (expected < 0) {
            QVERIFY(!threads);
            const QString message = QString::fromStdString(threads.error().toString());
            QVERIFY2(message.contains("OMP_NUM_THREADS") && message.contains("'" + omp + "'"),
                qPrintable(message));
            return;
        }
        if (!threads)
            QFAIL(qPrintable(QString::fromStdString(threads.error().toString())));
        QCOMPARE(*threads, expected);
    }

    void layoutValidation_data()
    {
        QTest::addColumn<int>("nproc");
        QTest::addColumn<int>("nnodes");
        QTest::addColumn<int>("nodeRank");
        QTest::addColumn<int>("port");
        QTest::addColumn<QString>("problem"); // empty: valid
        QTest::addRow("one node, free port") << 4 << 1 << 0 << 0 << "";
        QTest::addRow("two nodes") << 8 << 2 << 1 << 29500 << "";
        QTest::addRow("no ranks") << 0 << 1 << 0 << 0 << "nproc: got 0";
        QTest::addRow("node rank too big")
            << 1 << 2 << 2 << 29500 << "node_rank: got 2, expected 0 to 1";
        QTest::addRow("port out of range") << 1 << 1 << 0 << 70000 << "master_port: got 70000";
        QTest::addRow("two nodes, no port") << 1 << 2 << 0 << 0 << "master_port: needed";
    }
    void layoutValidation()
    {
        QFETCH(int, nproc);
        QFETCH(int, nnodes);
        QFETCH(int, nodeRank);
        QFETCH(int, port);
        QFETCH(QString, problem);
        const tb::common::Status status =
            validateLayout({nnodes, nproc, nodeRank, "127.0.0.1", port, ""});
        QCOMPARE(status.ok(), problem.isEmpty());
        if (!status)
            QVERIFY2(QString::fromStdString(status.error().message).contains(problem),
                status.error().message.c_str());
    }

    void rankEnvironmentFollowsTorchrun()
    {
        const WorldLayout layout{3, 4, 2, "node0.example", 29500, ""};
        const std::vector<std::string> env = rankEnvironment(layout, 1);
        for (const char* expected : {"MASTER_ADDR=node0.example", "MASTER_PORT=29500", "RANK=9",
                 "WORLD_SIZE=12", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", "NODE_RANK=2",
                 "GROUP_RANK=2", "TORCHELASTIC_RUN_ID=none"})
            QVERIFY2(std::find(env.begin(), env.end(), expected) != env.end(), expected);
        // Inherited values of the same names are replaced, others kept.
        const std::vector<std::string> merged =
            mergeEnvironment({"PATH=/bin", "RANK=77", "HOME=/root"}, env);
        QCOMPARE(std::count_if(merged.begin(), merged.end(),
                     [](const std::string& e) { return e.rfind("RANK=", 0) == 0; }),
            1L);
        QVERIFY(std::find(merged.begin(), merged.end(), "RANK=9") != merged.end());
        QVERIFY(std::find(merged.begin(), merged.end(), "PATH=/bin") != merged.end());
    }

    void runIdReachesEveryRank()
    {
        WorldLayout layout{1, 2, 0, "127.0.0.1", 29500, ""};
        layout.runId = newRunId();
        QCOMPARE(layout.runId.size(), std::size_t{12});
        QVERIFY(layout.runId != newRunId());
        for (int local = 0; local < 2; ++local) {
            const std::vector<std::string> env = rankEnvironment(layout, local);
            QVERIFY(std::find(env.begin(), env.end(), "TORCHELASTIC_RUN_ID=" + layout.runId)
                != env.end());
        }
        layout.runId = "my job";
        const tb::common::Status spaced = validateLayout(layout);
        QVERIFY(!spaced);
        QVERIFY2(spaced.error().message.find("run_id: got 'my job'") != std::string::npos,
            spaced.error().message.c_str());
    }

    // A run id names the registry's files: nothing that could leave the
    // registry or name a folder, where it is given and where it is read back.
    void runIdsStayInTheRegistry_data()
    {
        QTest::addColumn<QString>("runId");
        QTest::addColumn<bool>("valid");
        QTest::addRow("made by newRunId") << QString::fromStdString(tb::launch::newRunId()) << true;
        QTest::addRow("a name with dots, dashes, underscores") << "sweep-7.lr_3e-4" << true;
        QTest::addRow("up a folder") << "../../home/u/.bashrc" << false;
        QTest::addRow("a slash") << "a/b" << false;
        QTest::addRow("hidden") << ".x" << false;
        QTest::addRow("dot") << "." << false;
        QTest::addRow("dot dot") << ".." << false;
        QTest::addRow("a space") << "my job" << false;
        QTest::addRow("a newline") << "a\nb" << false;
        QTest::addRow("too long") << QString(129, 'a') << false;
    }

    void runIdsStayInTheRegistry()
    {
        QFETCH(QString, runId);
        QFETCH(bool, valid);
        QCOMPARE(tb::launch::checkRunId(runId.toStdString()).ok(), valid);
        tb::launch::RegistryEntry entry;
        entry.runId = runId.toStdString();
        const auto read = tb::launch::registryEntryFromJson(
            tb::launch::registryEntryToJson(entry), "/reg/x.node0.json");
        QCOMPARE(read.ok(), valid);
        if (!valid) {
            const std::string message = read.error().message;
            QVERIFY2(message.starts_with("/reg/x.node0.json: run_id: got '")
                    && message.find('\n') == std::string::npos,
                message.c_str());
        }
    }

    // A running entry's launcher is alive only while its pid runs `launch`
    // with the entry's run id or config as whole words: an entry naming a
    // part of them (a planted "/runs/" or "a.yaml") matches no launcher, so
    // node-check --signal cannot be turned on another run's.
    void launcherAliveMatchesWholeWords_data()
    {
        QTest::addColumn<QString>("command"); // the process's first argument
        QTest::addColumn<QString>("runId");
        QTest::addColumn<QString>("config");
        QTest::addColumn<bool>("alive");
        QTest::addRow("its run id") << "launch"
                                    << "job-1"
                                    << "/other.yaml" << true;
        QTest::addRow("its config") << "launch"
                                    << "zzz"
                                    << "/runs/a.yaml" << true;
        QTest::addRow("the config's folder") << "launch"
                                             << "zzz"
                                             << "/runs/" << false;
        QTest::addRow("the config's file name") << "launch"
                                                << "zzz"
                                                << "a.yaml" << false;
        QTest::addRow("a part of the run id") << "launch"
                                              << "job"
                                              << "/other.yaml" << false;
        QTest::addRow("a word of the config") << "launch"
                                              << "runs"
                                              << "" << false;
        QTest::addRow("not a launcher") << "train"
                                        << "job-1"
                                        << "/runs/a.yaml" << false;
    }

    void launcherAliveMatchesWholeWords()
    {
        QFETCH(QString, command);
        QFETCH(QString, runId);
        QFETCH(QString, config);
        QFETCH(bool, alive);
        // posix_spawn, not QProcess: Qt's process machinery leaves threads
        // behind, and ThreadSanitizer ends the later tests that fork.
        std::vector<std::string> words{tb::test::fakeTrainerProgram(), command.toStdString(),
            "--run-id", "job-1", "/runs/a.yaml", "--steps", "0", "--sleep-ms", "30000"};
        std::vector<char*> argv;
        for (std::string& word : words)
            argv.push_back(word.data());
        argv.push_back(nullptr);
        pid_t pid = 0;
        QCOMPARE(::posix_spawn(
                     &pid, tb::test::fakeTrainerProgram(), nullptr, nullptr, argv.data(), environ),
            0);
        // Until the child's exec has replaced it, /proc shows the test's own
        // command line: wait for the fake trainer's.
        const QString cmdline = QStringLiteral("/proc/%1/cmdline").arg(pid);
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                QFile file(cmdline);
                return file.open(QIODevice::ReadOnly)
                    && file.readAll().contains(QByteArrayLiteral("--sleep-ms"));
            }(),
            5000);
        tb::launch::RegistryEntry entry;
        entry.pid = pid;
        entry.runId = runId.toStdString();
        entry.config = config.toStdString();
        const bool found = tb::launch::launcherAlive(entry);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        QCOMPARE(found, alive);
    }

    void cancelTokenKeepsFirstSignal()
    {
        CancelToken token;
        QVERIFY(!token.isCancelled());
        token.cancel(SIGINT);
        token.cancel(SIGTERM);
        QVERIFY(token.isCancelled());
        QCOMPARE(token.signal(), SIGINT);
        QCOMPARE(token.requestCount(), 2);
        CancelToken plain;
        plain.cancel();
        QCOMPARE(plain.signal(), SIGTERM);
    }

    void runsRanksAndReapsThem()
    {
        const int fdsBefore = openFdCount();
        RecordingSink sink;
        const CancelToken token;
        const auto report = runLocalLaunch(fakeOptions(3, {"--steps", "2", "--fds"}), sink, token);
        QVERIFY2(report.ok(), report.ok() ? "" : report.error().message.c_str());
        QCOMPARE(report->outcome, LaunchOutcome::Succeeded);
        QCOMPARE(int(report->ranks.size()), 3);
        QCOMPARE(sink.started, (std::vector<int>{0, 1, 2}));
        QCOMPARE(int(sink.exited.size()), 3);
        QCOMPARE(sink.count("step 2/2"), 3);
        // Each rank sees stdin, stdout, stderr and nothing of the launcher's or the other ranks'.
        QCOMPARE(sink.count("fds 3"), 3);
        QVERIFY(report->masterPort > 0);
        QCOMPARE(openFdCount(), fdsBefore);
        QVERIFY(noChildLeft());
    }

    // The token stops a running launch: the forwarded SIGTERM reaches every
    // rank, which stops gracefully; nothing is left behind.
    void cancelStopsEveryRank()
    {
        const int fdsBefore = openFdCount();
        CancelToken token;
        RecordingSink sink;
        sink.cancel = &token;
        sink.cancelOn = "step 1/1";
        sink.cancelAfter = 2; // once both ranks are running
        const auto report =
            runLocalLaunch(fakeOptions(2, {"--steps", "1", "--sleep-ms", "60000"}), sink, token);
        QVERIFY(report.ok());
        QCOMPARE(report->outcome, LaunchOutcome::Cancelled);
        QCOMPARE(report->stopSignal, SIGTERM);
        QCOMPARE(sink.count("SIGTERM received, stopping gracefully"), 2);
        QCOMPARE(report->killedCount(), 0);
        for (const RankReport& rank : report->ranks)
            QVERIFY(rank.status && rank.status->isSuccess());
        qInfo("all ranks ended %.3f s after the cancel request", report->stopSeconds);
        QCOMPARE(openFdCount(), fdsBefore);
        QVERIFY(noChildLeft());
    }

    // The CLI's signal handler and the GUI's stop button cancel from another
    // thread than the one running the launch (checked by the ThreadSanitizer
    // preset): the request reaches every rank all the same.
    void cancelFromAnotherThread()
    {
        struct RunningSink : RecordingSink {
            std::atomic<int> running{0};
            void rankOutput(int rank, OutputStream stream, std::string_view line) override
            {
                RecordingSink::rankOutput(rank, stream, line);
                if (line.find("step 1/1") != std::string_view::npos)
                    running.fetch_add(1);
            }
        };
        CancelToken token;
        RunningSink sink;
        std::atomic<bool> launchEnded{false};
        std::thread stopper([&] {
            while (sink.running.load() < 2 && !launchEnded.load())
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            token.cancel();
        });
        const auto report =
            runLocalLaunch(fakeOptions(2, {"--steps", "1", "--sleep-ms", "60000"}), sink, token);
        launchEnded.store(true);
        stopper.join();
        QVERIFY(report.ok());
        QCOMPARE(report->outcome, LaunchOutcome::Cancelled);
        QCOMPARE(sink.count("SIGTERM received, stopping gracefully"), 2);
        QVERIFY(noChildLeft());
    }

    void unstartableProgramIsAnError()
    {
        RecordingSink sink;
        const CancelToken token;
        LaunchOptions options = fakeOptions(2, {});
        options.program = "/nonexistent/trainer";
        const auto report = runLocalLaunch(options, sink, token);
        QVERIFY(!report.ok());
        QVERIFY2(QString::fromStdString(report.error().message).contains("/nonexistent/trainer"),
            report.error().message.c_str());
        QVERIFY(sink.started.empty());
        QVERIFY(noChildLeft());
    }
};

QTEST_GUILESS_MAIN(TestLaunchCore)
#include "test_launch_core.moc"
