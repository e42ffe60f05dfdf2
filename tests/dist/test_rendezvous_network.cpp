// The rendezvous across real network interfaces (review H2): machines are
// network namespaces on one bridge (netns_cluster.h), each rank a
// dist_worker started in one. What a job listens on is reachable only where
// it must be, and what reaches it without the run's secret is turned away.
#include "../remote/netns_cluster.h"
#include "worker_runner.h"

#include <QtTest>

#include <unistd.h>

using tb::dist::test::describeFailures;
using tb::dist::test::JobLayout;
using tb::dist::test::RankResult;
using tb::dist::test::runWorkers;

class TestRendezvousNetwork : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY2(::geteuid() == 0, "network namespaces and bridges need root");
        const QString failure = m_machines.start({{}, {}, {}});
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }

    // A job across two machines: rank 0 serves the store on MASTER_ADDR
    // alone, and every Gloo listener is on the address its rank reaches the
    // others from, never on every interface.
    void acrossMachinesListensOnTheNodesAddressOnly()
    {
        JobLayout layout{2, 1, {}, {}};
        layout.masterAddr = m_machines.address(0);
        layout.rankNamespaces = {m_machines.ns(0), m_machines.ns(1)};
        const auto results = runWorkers(layout, {"listeners", "--timeout", "60"}, 90.0);
        QVERIFY2(describeFailures(results).isEmpty(), qPrintable(describeFailures(results)));
    }

    // A stranger on the same network reaches rank 0's store, but without
    // the run's secret it cannot take rank 1's place: both ends say so at
    // the rendezvous.
    void aStrangerOnTheNetworkCannotJoin()
    {
        JobLayout layout{2, 1, {}, {}};
        layout.masterAddr = m_machines.address(0);
        layout.rankNamespaces = {m_machines.ns(0), m_machines.ns(2)};
        layout.ranksWithoutSecret = {1};
        const auto results = runWorkers(layout, {"collectives", "--timeout", "60"}, 90.0);
        QCOMPARE(results.size(), std::size_t(2));
        for (const RankResult& rank : results) {
            QVERIFY2(rank.finished && !rank.crashed, qPrintable(describeFailures(results)));
            QVERIFY2(rank.exitCode == 2, qPrintable(describeFailures(results)));
            QVERIFY2(rank.seconds < 40.0, qPrintable(describeFailures(results)));
        }
        QVERIFY2(results[0].errorOutput.contains("rank 1 was started without TUNEBENCH_RUN_SECRET"),
            qPrintable(results[0].errorOutput));
        QVERIFY2(results[1].errorOutput.contains("this run requires TUNEBENCH_RUN_SECRET"),
            qPrintable(results[1].errorOutput));
    }

    // A job on one machine listens on its loopback: a process on another
    // machine, even one given the job's port and secret, finds nothing to
    // connect to, and the job trains on undisturbed.
    void aJobOnOneMachineIsNotReachableFromAnother()
    {
        JobLayout layout{2, 0, {}, {}};
        layout.rankNamespaces = {m_machines.ns(0), m_machines.ns(0)};
        layout.strayRankOfOtherJob = 1;
        layout.strayNamespace = m_machines.ns(1);
        layout.strayMasterAddr = m_machines.address(0);
        const auto results = runWorkers(layout, {"collectives", "--timeout", "10"}, 60.0);
        QCOMPARE(results.size(), std::size_t(3));
        const std::vector<RankResult> job(results.begin(), results.begin() + 2);
        QVERIFY2(describeFailures(job).isEmpty(), qPrintable(describeFailures(job)));
        const RankResult& outsider = results.back();
        QVERIFY2(outsider.finished && outsider.exitCode == 2, qPrintable(outsider.errorOutput));
        QVERIFY2(outsider.errorOutput.contains("could not reach the store of rank 0"),
            qPrintable(outsider.errorOutput));
    }

private:
    tb::test::NetnsCluster m_machines;
};

QTEST_GUILESS_MAIN(TestRendezvousNetwork)
#include "test_rendezvous_network.moc"
