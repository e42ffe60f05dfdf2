// A data-parallel run over its life: a sharded checkpoint continues at
// another world size and is consolidated by one process, a killed rank is
// named by the survivors, a bad rank environment is refused.
#include "distributed_runs.h"

#include <QTest>

using namespace tb::testutil::distributed;

class TestDistributedLifecycle : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY2(QFileInfo::exists(kCli), qPrintable(kCli + " is not built"));
        QVERIFY(m_dir.isValid());
        m_suite.start();
    }

    void cleanupTestCase()
    {
        if (m_suite.isValid())
            qInfo("suite: %.1f s of runs", static_cast<double>(m_suite.elapsed()) / 1000.0);
    }

    void reshardedResume()
    {
        RunSpec spec;
        spec.sharding = "zero3";
        spec.microBatch = kGlobalBatch / (kGradAccum * 2);
        const std::string two = writeConfig(m_dir, "resume2", spec);
        spec.microBatch = kGlobalBatch / (kGradAccum * 4);
        const std::string four = writeConfig(m_dir, "resume4", spec);
        spec.microBatch = kGlobalBatch / kGradAccum;
        const std::string one = writeConfig(m_dir, "resume1", spec);

        const std::string straight = m_dir.filePath("resume-straight").toStdString();
        const std::string atFour = m_dir.filePath("resume-at-4").toStdString();
        const std::string atOne = m_dir.filePath("resume-at-1").toStdString();
        auto ended = runTogether(kCli, launched(two, straight, 1, 2));
        QVERIFY2(allSucceeded(ended), qPrintable(describe(ended)));
        ended = runTogether(kCli, launched(two, atFour, 1, 2, {"--max-steps", "2"}));
        QVERIFY2(allSucceeded(ended), qPrintable(describe(ended)));
        const std::string step2 = atFour + "/checkpoints/step-00000002";
        QVERIFY(fs::exists(step2 + "/trainer_state.json"));
        QVERIFY(fs::exists(step2 + "/rank-00000.safetensors"));
        QVERIFY(fs::exists(step2 + "/rank-00001.safetensors"));
        copyFolder(atFour, atOne);

        ended = runTogether(kCli, launched(four, atFour, 1, 4, {"--resume"}));
        QVERIFY2(allSucceeded(ended), qPrintable(describe(ended)));
        ended = {runOne(kCli, single(one, atOne, {"--resume"}))};
        QVERIFY2(allSucceeded(ended), qPrintable(describe(ended)));

        QString problem;
        const Tensors expected = readTensors(exportOf(straight, "full"), &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));

        // One process consolidates the 2-rank sharded checkpoint: the same
        // weights, bit for bit, as rank 0 exported at the end of the run.
        const std::string consolidated = m_dir.filePath("resume-consolidated").toStdString();
        copyFolder(straight, consolidated);
        fs::remove_all(consolidated + "/merged");
        ended = {runOne(kCli, single(one, consolidated, {"--resume", "--export-only"}))};
        QVERIFY2(allSucceeded(ended), qPrintable(describe(ended)));
        const Tensors exported = readTensors(exportOf(consolidated, "full"), &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QCOMPARE(maxAbsDiff(exported, expected, &problem), 0.0);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));

        for (const auto& [runDir, world] : {std::pair{atFour, 4}, std::pair{atOne, 1}}) {
            const auto all = events(runDir + "/events.jsonl");
            const auto starts = ofType(all, "run_start");
            QCOMPARE(starts.size(), std::size_t(2));
            QCOMPARE(starts.back().value("world_size", 0), world);
            QCOMPARE(starts.back().value("resumed_from_step", -1), 2);
            QCOMPARE(all.back().value("status", ""), std::string("completed"));
            QCOMPARE(all.back().value("steps", 0), kSteps);
            // "the checkpoint was written by 2 ranks, this run has 4: ..."
            const QRegularExpression otherWorld(QString("\\b2 ranks\\b.*\\b%1\\b").arg(world));
            bool warned = false;
            for (const json& warning : ofType(all, "warning"))
                warned = warned
                    || otherWorld.match(QString::fromStdString(warning.value("message", "")))
                           .hasMatch();
            QVERIFY2(warned,
                qPrintable(QString("no warning names 2 ranks and %1 in %2")
                               .arg(world)
                               .arg(QString::fromStdString(runDir))));

            const Tensors got = readTensors(exportOf(runDir, "full"), &problem);
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
            const double diff = maxAbsDiff(got, expected, &problem);
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
            qInfo("resumed at world size %d: max |resumed - 2 ranks straight| = %.3g", world, diff);
            QVERIFY2(diff <= kResumeTolerance,
                qPrintable(QString("world %1: max abs difference %2").arg(world).arg(diff)));
        }
    }

    // Rank 1 of 3 is SIGKILLed mid-run: ranks 0 and 2 fail soon, naming it.
    // Rank 1 of 3 is SIGKILLed mid-run: ranks 0 and 2 fail soon, naming it.
    void rankDeathIsReported()
    {
        RunSpec spec;
        spec.microBatch = 1;
        spec.gradAccum = 1;
        spec.maxSteps = 100000;
        spec.timeoutSeconds = 20;
        const std::string config = writeConfig(m_dir, "death", spec);
        const std::string runDir = m_dir.filePath("death").toStdString();
        const auto port = tb::launch::pickFreePort("127.0.0.1");
        QVERIFY2(port.ok(), "no free port");

        std::vector<std::unique_ptr<QProcess>> ranks;
        for (int rank = 0; rank < 3; ++rank) {
            QProcessEnvironment environment = tb::testutil::plainEnvironment();
            environment.insert("MASTER_ADDR", "127.0.0.1");
            environment.insert("MASTER_PORT", QString::number(port.value()));
            environment.insert("WORLD_SIZE", "3");
            environment.insert("RANK", QString::number(rank));
            environment.insert("LOCAL_RANK", QString::number(rank));
            environment.insert("LOCAL_WORLD_SIZE", "3");
            environment.insert("NODE_RANK", "0");
            auto process = std::make_unique<QProcess>();
            process->setProcessEnvironment(environment);
            process->start(
                kCli, QStringList{"train", QString::fromStdString(config)} + trainOptions(runDir));
            QVERIFY(process->waitForStarted(10000));
            ranks.push_back(std::move(process));
        }
        const auto stopAll = qScopeGuard([&ranks] {
            for (auto& process : ranks) {
                if (process->state() != QProcess::NotRunning) {
                    process->kill();
                    process->waitForFinished(10000);
                }
            }
        });

        QElapsedTimer waiting;
        waiting.start();
        bool stepped = false;
        while (!stepped && waiting.elapsed() < 120000) {
            for (const auto& process : ranks)
                QVERIFY2(process->state() != QProcess::NotRunning,
                    qPrintable("a rank ended before the first step: "
                        + QString::fromUtf8(process->readAllStandardError())));
            stepped = !ofType(events(runDir + "/events.jsonl"), "step").empty();
            if (!stepped)
                QTest::qWait(20);
        }
        QVERIFY2(stepped, "no step event within 120 s");

        ::kill(static_cast<pid_t>(ranks[1]->processId()), SIGKILL);
        QElapsedTimer sinceDeath;
        sinceDeath.start();
        ranks[1]->waitForFinished(10000);
        double seconds[3] = {-1.0, -1.0, -1.0};
        while ((seconds[0] < 0.0 || seconds[2] < 0.0) && sinceDeath.elapsed() < 90000) {
            for (int rank : {0, 2}) {
                if (seconds[rank] < 0.0
                    && ranks[static_cast<std::size_t>(rank)]->waitForFinished(10))
                    seconds[rank] = static_cast<double>(sinceDeath.elapsed()) / 1000.0;
            }
        }
        QString err[3];
        QString out[3];
        for (int rank : {0, 2}) {
            QProcess& process = *ranks[static_cast<std::size_t>(rank)];
            err[rank] = QString::fromUtf8(process.readAllStandardError());
            out[rank] = QString::fromUtf8(process.readAllStandardOutput());
            if (seconds[rank] >= 0.0)
                qInfo("rank %d exited %.2f s after rank 1 was killed (exit status %d)", rank,
                    seconds[rank], process.exitCode());
        }
        for (int rank : {0, 2}) {
            QProcess& process = *ranks[static_cast<std::size_t>(rank)];
            QVERIFY2(seconds[rank] >= 0.0,
                qPrintable(QString("rank %1 still runs 90 s after rank 1 died").arg(rank)));
            QCOMPARE(process.exitStatus(), QProcess::NormalExit);
            QVERIFY2(process.exitCode() != 0, qPrintable(out[rank] + err[rank]));
            QVERIFY2(seconds[rank] < 60.0, qPrintable(QString::number(seconds[rank])));
        }
        // The failure is in rank 0's events, with a failed run_end.
        const auto all = events(runDir + "/events.jsonl");
        QVERIFY(!all.empty());
        QCOMPARE(all.back().value("status", ""), std::string("failed"));
        QVERIFY2(QString::fromStdString(all.back().value("message", "")).contains("rank 1"),
            all.back().dump().c_str());
        // And on stderr, where a launcher and a user look for it.
        for (int rank : {0, 2})
            QVERIFY2(err[rank].contains("rank 1"),
                qPrintable(QString("rank %1's stderr does not name rank 1:\n%2\nstdout:\n%3")
                               .arg(rank)
                               .arg(err[rank], out[rank])));
    }

    void badRankEnvironment_data()
    {
        QTest::addColumn<QString>("rank");
        QTest::addColumn<QString>("worldSize");
        QTest::addColumn<QString>("localRank");
        QTest::addColumn<QString>("expected");
        const auto row = [](const char* tag, const QStringList& values) {
            QTest::newRow(tag) << values[0] << values[1] << values[2] << values[3];
        };
        row("RANK beyond WORLD_SIZE", {"5", "2", "1", "RANK='5'"});
        row("WORLD_SIZE not a number", {"0", "two", "0", "WORLD_SIZE='two'"});
        row("LOCAL_RANK disagrees", {"1", "2", "0", "LOCAL_RANK"});
    }

    // Refused before any rendezvous, naming the variable and its value.
    void badRankEnvironment()
    {
        QFETCH(QString, rank);
        QFETCH(QString, worldSize);
        QFETCH(QString, localRank);
        QFETCH(QString, expected);
        const std::string config = writeConfig(m_dir, "badenv", RunSpec{});
        const std::string runDir = m_dir.filePath("badenv").toStdString();
        const auto port = tb::launch::pickFreePort("127.0.0.1");
        QVERIFY2(port.ok(), "no free port");
        Command command = single(config, runDir);
        command.environment.insert("MASTER_ADDR", "127.0.0.1");
        command.environment.insert("MASTER_PORT", QString::number(port.value()));
        command.environment.insert("RANK", rank);
        command.environment.insert("WORLD_SIZE", worldSize);
        command.environment.insert("LOCAL_RANK", localRank);
        command.environment.insert("LOCAL_WORLD_SIZE", "2");
        QElapsedTimer clock;
        clock.start();
        const Ended ended = runOne(kCli, command);
        QVERIFY2(ended.finished && !ended.crashed, qPrintable(describe({ended})));
        QCOMPARE(ended.exitCode, 2);
        QVERIFY2(ended.err.contains(expected), qPrintable(ended.err));
        QVERIFY2(clock.elapsed() < 30000, "the refusal waited for a rendezvous");
        QVERIFY(!fs::exists(runDir + "/events.jsonl"));
    }

private:
    QTemporaryDir m_dir;
    QElapsedTimer m_suite;
};

QTEST_GUILESS_MAIN(TestDistributedLifecycle)
#include "test_distributed_lifecycle.moc"
