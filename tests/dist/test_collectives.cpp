// Real ranks on loopback: dist_worker processes run every collective on fp32
// and bf16 tensors of odd sizes and check the results themselves; this suite
// starts them as torchrun would and wants every rank to exit 0.
#include "dist/rendezvous.h"
#include "worker_runner.h"

#include <QtTest>

using tb::dist::test::describeFailures;
using tb::dist::test::JobLayout;
using tb::dist::test::runWorkers;

class TestCollectives : public QObject {
    Q_OBJECT

private slots:
    void allGatherKeepsVersionCounterInProcess()
    {
        // A world of one: no sockets, but the same copy as every group.
        const auto environment = tb::dist::readRankEnvironment({{"HOME", "/"}});
        QVERIFY(environment.ok());
        auto world = tb::dist::rendezvous(*environment, {});
        QVERIFY(world.ok());
        auto gathered = torch::zeros({7});
        auto view = gathered.narrow(0, 2, 3);
        auto weight = torch::ones({7}, torch::requires_grad());
        auto loss = (weight * gathered).sum(); // autograd saved `gathered`
        const auto version = gathered._version();
        world->all->allGather(gathered, torch::arange(7, torch::kFloat32))->wait();
        QCOMPARE(gathered._version(), version);
        QCOMPARE(view._version(), version);
        loss.backward(); // would throw had the version moved
        QVERIFY(torch::equal(weight.grad(), torch::arange(7, torch::kFloat32)));
        QCOMPARE(world->all->stats().allGatherBytes, 0); // nothing leaves a world of one
        QCOMPARE(world->all->stats().collectives, 1);
    }

    void collectivesAcrossRanks_data()
    {
        QTest::addColumn<int>("worldSize");
        QTest::addColumn<int>("localWorldSize");
        QTest::newRow("2 ranks, one node") << 2 << 2;
        QTest::newRow("4 ranks, one node") << 4 << 4;
        QTest::newRow("4 ranks, two nodes of 2") << 4 << 2;
    }

    void collectivesAcrossRanks()
    {
        QFETCH(int, worldSize);
        QFETCH(int, localWorldSize);
        const auto results =
            runWorkers(JobLayout{worldSize, localWorldSize, {}, {}}, {"collectives"}, 120.0);
        QCOMPARE(static_cast<int>(results.size()), worldSize);
        QVERIFY2(describeFailures(results).isEmpty(), qPrintable(describeFailures(results)));
    }

    void lateRankZeroIsWaitedFor()
    {
        // Rank 0 serves the store: the others retry their connection until it comes.
        const auto results = runWorkers(
            JobLayout{2, 0, {}, {}}, {"slow-arrival", "--late-rank", "0", "--delay", "2"}, 120.0);
        QVERIFY2(describeFailures(results).isEmpty(), qPrintable(describeFailures(results)));
    }

    // Neither the store nor Gloo authenticates: a job on one machine keeps
    // both off every other interface (docs/LAUNCH.md, "What listens").
    void storeAndGlooListenOnTheLoopbackOnly()
    {
        const auto results = runWorkers(JobLayout{2, 0, {}, {}}, {"listeners"}, 60.0);
        QVERIFY2(describeFailures(results).isEmpty(), qPrintable(describeFailures(results)));
    }

    void allReduceTiming()
    {
        const auto results = runWorkers(JobLayout{2, 0, {}, {}}, {"time-allreduce"}, 120.0);
        QVERIFY2(describeFailures(results).isEmpty(), qPrintable(describeFailures(results)));
        qInfo("%s", qPrintable(results.front().output.trimmed()));
    }
};

QTEST_APPLESS_MAIN(TestCollectives)
#include "test_collectives.moc"
