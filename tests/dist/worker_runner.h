#pragma once

// Starts dist_worker processes as the ranks of one job, the way torchrun
// would (its environment variables), and waits for them with a bound: on
// loopback, or each rank in a network namespace of its own.
#include "../support/test_paths.h"
#include "common/run_secret.h"
#include "launch/free_port.h"
#include "launch/world_layout.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QStringList>
#include <QThread>
#include <QtTest>

#include <memory>
#include <vector>

namespace tb::dist::test {

struct RankResult {
    bool started = false;
    int exitCode = -1;
    bool crashed = false; // ended by a signal (the rank that kills itself)
    bool finished = false; // false: still running at the deadline, then killed
    double seconds = 0.0; // from the start of the job to this rank's end
    QString errorOutput;
    QString output;
};

struct JobLayout {
    int worldSize = 2;
    int localWorldSize = 0; // 0: all ranks on one "node"
    QList<int> ranksToStart; // empty: every rank
    QList<int> ranksThatHang; // not waited for; killed once the others ended
    // >= 0: one more process, given this rank, the same port and another
    // run id, as a rank of a second job handed the same MASTER_PORT. Its
    // result comes last.
    int strayRankOfOtherJob = -1;
    // Every rank gets the job's run secret (TUNEBENCH_RUN_SECRET), as
    // tunebench-cli launch gives it, but these get another one, or none.
    QList<int> ranksWithAnotherSecret = {};
    QList<int> ranksWithoutSecret = {};
    // Across machines (network namespaces, test_rendezvous_network): the
    // ranks' MASTER_ADDR, the namespace each rank starts in (`ip netns
    // exec`; none given: this one), and the stray process's.
    QString masterAddr = QStringLiteral("127.0.0.1");
    QStringList rankNamespaces = {};
    QString strayMasterAddr = {}; // empty: masterAddr
    QString strayNamespace = {};
};

inline QString newSecret()
{
    return QString::fromStdString(tb::common::newRunSecret().value());
}

inline std::vector<RankResult> runWorkers(
    const JobLayout& layout, const QStringList& arguments, double deadlineSeconds)
{
    const auto port = tb::launch::pickFreePort("127.0.0.1");
    if (!port.ok()) {
        qWarning("no free port: %s", port.error().message.c_str());
        return {};
    }
    const int local = layout.localWorldSize > 0 ? layout.localWorldSize : layout.worldSize;
    const bool stray = layout.strayRankOfOtherJob >= 0;
    const int processCount = layout.worldSize + (stray ? 1 : 0);
    std::vector<std::unique_ptr<QProcess>> processes(static_cast<std::size_t>(processCount));
    std::vector<RankResult> results(static_cast<std::size_t>(processCount));
    const QString runId = QString::fromStdString(tb::launch::newRunId());
    const QString secret = newSecret();
    QElapsedTimer clock;
    clock.start();
    for (int index = 0; index < processCount; ++index) {
        const bool isStray = index == layout.worldSize;
        const int rank = isStray ? layout.strayRankOfOtherJob : index;
        if (!isStray && !layout.ranksToStart.isEmpty() && !layout.ranksToStart.contains(rank))
            continue;
        auto environment = QProcessEnvironment::systemEnvironment();
        environment.insert("TORCHELASTIC_RUN_ID", isStray ? "other-" + runId : runId);
        environment.insert("MASTER_ADDR",
            isStray && !layout.strayMasterAddr.isEmpty() ? layout.strayMasterAddr
                                                         : layout.masterAddr);
        environment.insert("MASTER_PORT", QString::number(port.value()));
        environment.insert("WORLD_SIZE", QString::number(layout.worldSize));
        environment.insert("RANK", QString::number(rank));
        environment.insert("LOCAL_WORLD_SIZE", QString::number(local));
        environment.insert("LOCAL_RANK", QString::number(rank % local));
        environment.insert("GROUP_RANK", QString::number(rank / local));
        environment.remove("TUNEBENCH_RUN_SECRET");
        if (layout.ranksWithAnotherSecret.contains(rank))
            environment.insert("TUNEBENCH_RUN_SECRET", newSecret());
        else if (!layout.ranksWithoutSecret.contains(rank))
            environment.insert("TUNEBENCH_RUN_SECRET", secret);
        auto& process = processes[static_cast<std::size_t>(index)];
        process = std::make_unique<QProcess>();
        process->setProcessEnvironment(environment);
        const QString inNamespace =
            isStray ? layout.strayNamespace : layout.rankNamespaces.value(rank);
        if (inNamespace.isEmpty())
            process->start(QString::fromUtf8(tb::test::distWorkerProgram()), arguments);
        else
            process->start(QStringLiteral("ip"),
                QStringList{QStringLiteral("netns"), QStringLiteral("exec"), inNamespace,
                    QString::fromUtf8(tb::test::distWorkerProgram())}
                    + arguments);
        results[static_cast<std::size_t>(index)].started = true;
        if (!process->waitForStarted(10000))
            qWarning("rank %d did not start: %s", rank, qPrintable(process->errorString()));
    }
    // Poll rather than wait on one rank at a time, so every rank's end time is its own.
    bool running = true;
    while (running && clock.elapsed() < deadlineSeconds * 1000.0) {
        running = false;
        for (std::size_t rank = 0; rank < processes.size(); ++rank) {
            auto& process = processes[rank];
            if (!process || results[rank].finished)
                continue;
            if (process->state() != QProcess::NotRunning && !process->waitForFinished(20)) {
                running = running || !layout.ranksThatHang.contains(static_cast<int>(rank));
                continue;
            }
            results[rank].finished = true;
            results[rank].seconds = clock.elapsed() / 1000.0;
        }
    }
    for (std::size_t rank = 0; rank < processes.size(); ++rank) {
        auto& process = processes[rank];
        if (!process)
            continue;
        if (!results[rank].finished) {
            process->kill();
            process->waitForFinished(5000);
        }
        results[rank].exitCode = process->exitCode();
        results[rank].crashed = process->exitStatus() == QProcess::CrashExit;
        results[rank].errorOutput = QString::fromUtf8(process->readAllStandardError());
        results[rank].output = QString::fromUtf8(process->readAllStandardOutput());
    }
    return results;
}

// Every started rank finished with exit code 0; otherwise the failure shows
// each rank's code and stderr.
inline QString describeFailures(const std::vector<RankResult>& results)
{
    QString text;
    for (std::size_t rank = 0; rank < results.size(); ++rank) {
        const auto& result = results[rank];
        if (!result.started)
            continue;
        if (result.finished && !result.crashed && result.exitCode == 0)
            continue;
        text += QString("rank %1: %2 exit %3 after %4 s: %5\n")
                    .arg(rank)
                    .arg(result.finished ? (result.crashed ? "crashed," : "") : "HUNG, killed,")
                    .arg(result.exitCode)
                    .arg(result.seconds, 0, 'f', 1)
                    .arg(result.errorOutput.trimmed());
    }
    return text;
}

} // namespace tb::dist::test
