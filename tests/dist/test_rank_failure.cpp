// Failures: a rank that dies after the rendezvous, one that never comes, and
// one of another job that reaches this job's store.
// The other ranks must fail (never hang) within a bound, naming the rank.
#include "worker_runner.h"

#include <QRegularExpression>
#include <QtTest>

using tb::dist::test::JobLayout;
using tb::dist::test::runWorkers;

class TestRankFailure : public QObject {
    Q_OBJECT

private slots:
    void deadRankIsNamedByTheOthers()
    {
        const auto results = runWorkers(JobLayout{3, 0, {}, {}},
            {"die-after-rendezvous", "--dying-rank", "1", "--heartbeat", "1", "--timeout", "60"},
            60.0);
        QCOMPARE(static_cast<int>(results.size()), 3);
        QVERIFY2(results[1].crashed, "rank 1 was to SIGKILL itself");
        // Every rank's account, for a failure to be read whole.
        QString all;
        for (std::size_t rank = 0; rank < results.size(); ++rank)
            all += QString("rank %1 (exit %2%3, %4 s): %5\n")
                       .arg(rank)
                       .arg(results[rank].exitCode)
                       .arg(results[rank].crashed ? ", crashed" : "")
                       .arg(results[rank].seconds, 0, 'f', 1)
                       .arg(results[rank].errorOutput.trimmed());
        for (const std::size_t rank : {std::size_t{0}, std::size_t{2}}) {
            const auto& result = results[rank];
            QVERIFY2(result.finished, qPrintable(QString("rank %1 hung").arg(rank)));
            QVERIFY2(result.exitCode == 3, qPrintable(all));
            QVERIFY2(result.errorOutput.contains("rank 1 stopped responding"), qPrintable(all));
            const double noticed = result.seconds - results[1].seconds;
            qInfo("rank %zu failed %.1f s after rank 1 died: %s", rank, noticed,
                qPrintable(result.errorOutput.trimmed()));
            QVERIFY2(noticed < 30.0, qPrintable(QString("took %1 s").arg(noticed)));
        }
    }

    void frozenRankIsNamedAfterTheTimeout()
    {
        // SIGSTOP: the peer's sockets stay open, so only Gloo's timeout ends the
        // collective; the heartbeat then tells a stuck rank from a slow one.
        const double timeout = 5.0;
        const auto results = runWorkers(JobLayout{3, 0, {}, {1}},
            {"freeze-after-rendezvous", "--dying-rank", "1", "--heartbeat", "1", "--timeout",
                QString::number(timeout)},
            40.0);
        QCOMPARE(static_cast<int>(results.size()), 3);
        for (const std::size_t rank : {std::size_t{0}, std::size_t{2}}) {
            const auto& result = results[rank];
            QVERIFY2(result.finished && result.exitCode == 3,
                qPrintable(QString("rank %1: %2 exit %3: %4")
                               .arg(rank)
                               .arg(result.finished ? "" : "hung,")
                               .arg(result.exitCode)
                               .arg(result.errorOutput)));
            QVERIFY2(result.errorOutput.contains("rank 1 stopped responding"),
                qPrintable(result.errorOutput));
            qInfo("rank %zu failed after %.1f s (collective timeout %.0f s): %s", rank,
                result.seconds, timeout, qPrintable(result.errorOutput.trimmed()));
            QVERIFY2(result.seconds < 30.0, qPrintable(QString("took %1 s").arg(result.seconds)));
        }
    }

    void missingRankIsNamedAtRendezvous()
    {
        const double timeout = 3.0;
        const auto results = runWorkers(JobLayout{3, 0, {0, 1}, {}},
            {"rendezvous-only", "--timeout", QString::number(timeout)}, 30.0);
        for (const std::size_t rank : {std::size_t{0}, std::size_t{1}}) {
            const auto& result = results[rank];
            QVERIFY2(result.finished, qPrintable(QString("rank %1 hung").arg(rank)));
            QCOMPARE(result.exitCode, 2);
            QVERIFY2(result.errorOutput.contains("rank 2 of 3 never arrived"),
                qPrintable(result.errorOutput));
            const QRegularExpressionMatch waited =
                QRegularExpression(QStringLiteral("gave up ([0-9.]+) s into the rendezvous"))
                    .match(result.errorOutput);
            QVERIFY2(waited.hasMatch(), qPrintable(result.errorOutput));
            qInfo("rank %zu gave up %s s into the rendezvous (%.1f s after its start): %s", rank,
                qPrintable(waited.captured(1)), result.seconds,
                qPrintable(result.errorOutput.trimmed()));
            QVERIFY2(waited.captured(1).toDouble() < timeout + 5.0, qPrintable(result.errorOutput));
        }
    }

    void rankOfAnotherJobIsTurnedAway()
    {
        // Two jobs handed one port: the stray rank 1 of the other job reaches
        // this job's store. It must fail naming both jobs, and this job must
        // not notice.
        // This job's rank 2 comes 8 s late, so its store is still up when the
        // stray (not delayed: it is rank 1) arrives.
        JobLayout layout{3, 0, {}, {}};
        layout.strayRankOfOtherJob = 1;
        const auto results = runWorkers(
            layout, {"slow-arrival", "--late-rank", "2", "--delay", "8", "--timeout", "30"}, 60.0);
        const std::vector<tb::dist::test::RankResult> job(results.begin(), results.begin() + 3);
        QVERIFY2(describeFailures(job).isEmpty(), qPrintable(describeFailures(job)));
        const auto& stray = results.back();
        QVERIFY2(stray.finished, "the stray rank hung");
        QCOMPARE(stray.exitCode, 2);
        for (const char* expected : {"serves job '", "this rank belongs to job 'other-",
                 "two jobs were given the same MASTER_PORT"})
            QVERIFY2(stray.errorOutput.contains(expected), qPrintable(stray.errorOutput));
        qInfo("stray rank turned away after %.1f s: %s", stray.seconds,
            qPrintable(stray.errorOutput.trimmed()));
    }

    // A rank without the run's secret cannot take a rank's place, and a rank
    // with one does not join a rank 0 that cannot prove it: each side ends
    // with exit 2, within the bound, naming what failed.
    void joiningNeedsTheRunSecret_data()
    {
        QTest::addColumn<QList<int>>("anotherSecret");
        QTest::addColumn<QList<int>>("noSecret");
        QTest::addColumn<QString>("rankZeroSays");
        QTest::addColumn<QString>("rankOneSays");
        QTest::newRow("rank 1 has another secret")
            << QList<int>{1} << QList<int>{} << "rank 1 could not prove it knows this run's secret"
            << "rank 0 refused this rank's proof";
        QTest::newRow("rank 1 has none")
            << QList<int>{} << QList<int>{1} << "rank 1 was started without TUNEBENCH_RUN_SECRET"
            << "this run requires TUNEBENCH_RUN_SECRET";
        QTest::newRow("rank 0 has none")
            << QList<int>{} << QList<int>{0} << "rank 1 has a run secret and this rank 0 has none"
            << "rank 0 has no run secret";
    }

    void joiningNeedsTheRunSecret()
    {
        QFETCH(QList<int>, anotherSecret);
        QFETCH(QList<int>, noSecret);
        QFETCH(QString, rankZeroSays);
        QFETCH(QString, rankOneSays);
        JobLayout layout{2, 0, {}, {}};
        layout.ranksWithAnotherSecret = anotherSecret;
        layout.ranksWithoutSecret = noSecret;
        const auto results = runWorkers(layout, {"collectives", "--timeout", "60"}, 90.0);
        QCOMPARE(results.size(), std::size_t(2));
        for (const auto& rank : results) {
            QVERIFY2(rank.finished && !rank.crashed, qPrintable(describeFailures(results)));
            QVERIFY2(rank.exitCode != 0, qPrintable("a rank went on: " + rank.errorOutput));
        }
        QVERIFY2(results[1].errorOutput.contains(rankOneSays), qPrintable(results[1].errorOutput));
        QVERIFY2(results[0].errorOutput.contains(rankZeroSays), qPrintable(results[0].errorOutput));
        // Both ends learn it at the rendezvous, not at the collectives' timeout.
        for (const auto& rank : results)
            QVERIFY2(rank.seconds < 40.0, qPrintable(describeFailures(results)));
    }
};

QTEST_APPLESS_MAIN(TestRankFailure)
#include "test_rank_failure.moc"
