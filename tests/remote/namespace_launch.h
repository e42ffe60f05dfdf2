#pragma once

// A launch across network-namespace hosts as test_multi_node and
// test_hung_node start it: the hosts with their hostfile, the CLI's
// arguments, and the steps rank 0 has written.
#include "../support/qt_test_paths.h"
#include "../train/distributed_runs.h"
#include "netns_cluster.h"

#include "launch/run_registry.h"

#include <QDirIterator>
#include <QElapsedTimer>
#include <QtTest>

#include <csignal>
#include <memory>
#include <string>
#include <vector>

namespace {

using tb::test::HostView;
using tb::test::NetnsCluster;
using namespace tb::testutil::distributed;

const QString kCliPath = tb::test::qBuildPath("app/cli/tunebench-cli");

// A cluster of `views.size()` hosts, each with 1 slot, and its hostfile.
struct Cluster {
    std::unique_ptr<NetnsCluster> hosts = std::make_unique<NetnsCluster>();
    QString hostfile;

    QString start(const std::vector<HostView>& views)
    {
        if (QString failure = hosts->start(views); !failure.isEmpty())
            return failure;
        hostfile = hosts->path(QStringLiteral("hostfile"));
        QFile file(hostfile);
        if (!file.open(QIODevice::WriteOnly))
            return QStringLiteral("cannot write the hostfile");
        file.write("# two machines, one rank each\n");
        for (int k = 0; k < int(views.size()); ++k)
            file.write(QStringLiteral("root@%1 slots=1\n").arg(hosts->address(k)).toUtf8());
        return {};
    }

    QStringList launchArguments(const std::string& config, const QString& knownHosts = {}) const
    {
        return {QStringLiteral("launch"), QString::fromStdString(config),
            QStringLiteral("--hostfile"), hostfile, QStringLiteral("--ssh-key"), hosts->userKey(),
            QStringLiteral("--known-hosts"),
            knownHosts.isEmpty() ? hosts->knownHosts() : knownHosts, QStringLiteral("--grace"),
            QStringLiteral("15")};
    }

    // Registry entries host k holds.
    QStringList registryEntries(int k) const
    {
        QStringList found;
        QDirIterator it(hosts->stateDir(k) + "/tunebench/runs", {QStringLiteral("*.json")});
        while (it.hasNext())
            found << it.next();
        return found;
    }
};

// Steps rank 0 has written to the run folder so far.
inline int stepsWritten(const std::string& runDir)
{
    if (!fs::exists(runDir + "/events.jsonl"))
        return 0;
    return int(ofType(events(runDir + "/events.jsonl"), "step").size());
}

inline bool waitForSteps(const std::string& runDir, int steps, int timeoutMs = 120000)
{
    QElapsedTimer clock;
    clock.start();
    while (stepsWritten(runDir) < steps) {
        if (clock.elapsed() > timeoutMs)
            return false;
        QTest::qWait(200);
    }
    return true;
}

// Whether host k recorded its part of the run as ended by a stop: by the
// forwarded signal, or with exit 0 where its ranks ended first because the
// ranks agree on a stop among themselves.
inline bool nodeEndedOnStop(const Cluster& cluster, int k)
{
    const auto entry =
        tb::launch::readRegistryEntry(cluster.registryEntries(k).value(0).toStdString());
    if (!entry.ok())
        return false;
    return entry->state == "exited" && !entry->failed()
        && (entry->exitCode == 0 || (entry->exitCode == 128 + SIGTERM && entry->stoppedOnRequest));
}

// A LoRA run on every node's one slot, `maxSteps` long.
inline std::string loraRunConfig(const QTemporaryDir& dir, const QString& name, int maxSteps)
{
    RunSpec spec;
    spec.method = QStringLiteral("lora");
    spec.microBatch = kGlobalBatch / (kGradAccum * 2);
    spec.maxSteps = maxSteps;
    spec.timeoutSeconds = 60;
    return writeConfig(dir, name, spec);
}

// What follows the run config on the launch's command line: every rank's
// trainer options, the run folder `runDir`.
inline QStringList trainerArguments(const std::string& runDir)
{
    return QStringList{QStringLiteral("--")} + trainOptions(runDir);
}

} // namespace
