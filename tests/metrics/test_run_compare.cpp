// The comparison arithmetic (smoothing, x-axes, steady rates, scaling
// efficiency) and the run catalog over real folders written here.
#include "common/local_machine.h"
#include "metrics/event.h"
#include "metrics/event_writer.h"
#include "metrics/live_catalog.h"
#include "metrics/run_catalog.h"
#include "metrics/run_compare.h"
#include "metrics/run_control.h"
#include "metrics/step_record.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace tb::metrics;
using nlohmann::json;

namespace {

constexpr double kStart = 1.0e9;

Event eventOf(EventType type, double time, json fields)
{
    auto event = parseEvent(makeEvent(type, 0, time, std::move(fields)).dump());
    if (!event)
        qFatal("bad event: %s", event.error().message.c_str());
    return *event;
}

json startFields(
    const std::string& name, int worldSize, std::optional<RunPrediction> prediction = {})
{
    json fields = {{"run_id", name}, {"world_size", worldSize},
        {"config",
            {{"name", name}, {"method", "lora"}, {"output", {{"dir", "/x/" + name}}},
                {"training", {{"micro_batch", 8}}}}},
        {"model", {{"name", "stories260K"}}}, {"total_steps", 4}};
    if (prediction)
        fields["prediction"] = prediction->toJson();
    return fields;
}

// Steps of `tokens` tokens taking `seconds` each, the first twice as long
// (warm-up), written one second apart after the run_start.
RunHistory runOf(int worldSize, int steps, int64_t tokens, double seconds)
{
    RunHistory history;
    history.apply(eventOf(
        EventType::RunStart, kStart, startFields("np" + std::to_string(worldSize), worldSize)));
    history.apply(eventOf(EventType::Eval, kStart + 0.5, {{"step", 0}, {"loss", 4.0}}));
    for (int step = 1; step <= steps; ++step) {
        StepRecord record;
        record.step = step;
        record.loss = 4.0 - 0.5 * step;
        record.tokens = tokens;
        record.stepSeconds = step == 1 ? 2 * seconds : seconds;
        record.tokensPerSecond = double(tokens) / record.stepSeconds;
        history.apply(eventOf(EventType::Step, kStart + step, record.toFields()));
    }
    history.apply(eventOf(EventType::Eval, kStart + steps + 0.5, {{"step", steps}, {"loss", 2.5}}));
    return history;
}

void writeRun(const std::string& dir, const std::vector<std::string>& lines)
{
    std::filesystem::create_directories(dir);
    std::ofstream out(dir + "/events.jsonl", std::ios::binary);
    for (const std::string& line : lines)
        out << line << "\n";
}

std::string line(EventType type, double time, json fields)
{
    return makeEvent(type, 0, time, std::move(fields)).dump();
}

} // namespace

class TestRunCompare : public QObject {
    Q_OBJECT

private slots:
    void smoothing_data()
    {
        QTest::addColumn<QList<double>>("values");
        QTest::addColumn<double>("weight");
        QTest::addColumn<QList<double>>("expected");
        QTest::newRow("no smoothing") << QList<double>{1, 5, 3} << 0.0 << QList<double>{1, 5, 3};
        // last: 0.5, 1.25, 2.125; divided by 1 - 0.5^n: 0.5, 0.75, 0.875.
        QTest::newRow("de-biased")
            << QList<double>{1, 2, 3} << 0.5 << QList<double>{1, 5.0 / 3, 2.125 / 0.875};
        // The first value is never pulled towards 0.
        QTest::newRow("first value kept") << QList<double>{7} << 0.99 << QList<double>{7};
        QTest::newRow("constant stays constant")
            << QList<double>{2, 2, 2, 2} << 0.9 << QList<double>{2, 2, 2, 2};
        QTest::newRow("NaN passes through, uncounted")
            << QList<double>{1, std::nan(""), 2} << 0.5 << QList<double>{1, std::nan(""), 5.0 / 3};
    }
    void smoothing()
    {
        QFETCH(QList<double>, values);
        QFETCH(double, weight);
        QFETCH(QList<double>, expected);
        const std::vector<double> result =
            smoothed(std::vector<double>(values.begin(), values.end()), weight);
        QCOMPARE(int(result.size()), int(expected.size()));
        for (size_t i = 0; i < result.size(); ++i) {
            if (std::isnan(expected[int(i)]))
                QVERIFY(std::isnan(result[i]));
            else
                QVERIFY2(std::abs(result[i] - expected[int(i)]) < 1e-12,
                    qPrintable(QStringLiteral("%1: %2 != %3")
                                   .arg(i)
                                   .arg(result[i])
                                   .arg(expected[int(i)])));
        }
    }

    void positionsOnEachAxis_data()
    {
        QTest::addColumn<QString>("axis");
        QTest::addColumn<QList<double>>("steps");
        QTest::addColumn<QList<double>>("evals");
        QTest::newRow("step") << "step" << QList<double>{1, 2, 3} << QList<double>{0, 3};
        QTest::newRow("tokens") << "tokens" << QList<double>{100, 200, 300}
                                << QList<double>{0, 300};
        QTest::newRow("time") << "time" << QList<double>{1, 2, 3} << QList<double>{0.5, 3.5};
    }
    void positionsOnEachAxis()
    {
        QFETCH(QString, axis);
        QFETCH(QList<double>, steps);
        QFETCH(QList<double>, evals);
        const RunHistory history = runOf(1, 3, 100, 0.5);
        const std::optional<XAxis> parsed = xAxisFromName(axis.toStdString());
        QVERIFY(parsed.has_value());
        QCOMPARE(QString::fromUtf8(xAxisName(*parsed)), axis);
        const std::vector<double> x = stepPositions(history, *parsed);
        QCOMPARE(QList<double>(x.begin(), x.end()), steps);
        const std::vector<double> e = evalPositions(history, *parsed);
        QCOMPARE(QList<double>(e.begin(), e.end()), evals);
    }

    void unknownAxisName() { QVERIFY(!xAxisFromName("epoch").has_value()); }

    void steadyRatesLeaveOutTheFirstStep()
    {
        const RunHistory history = runOf(1, 4, 1000, 0.5);
        QCOMPARE(steadyTokensPerSecond(history.steps()), 2000.0);
        QCOMPARE(steadyStepSeconds(history.steps()), 0.5);
        QCOMPARE(steadyTokensPerSecond({}), -1.0);
        QCOMPARE(steadyTokensPerSecond({history.steps().front()}), 1000.0);
    }

    void scalingEfficiencyAgainstTheSmallestRun()
    {
        // 1 rank: 2000 tokens/s; 2 ranks: 3600 (90 %); 4 ranks: 6000 (75 %).
        std::vector<RunEntry> runs;
        runs.push_back(summariseRun("/r/np4", runOf(4, 4, 3000, 0.5)));
        runs.push_back(summariseRun("/r/np1", runOf(1, 4, 1000, 0.5)));
        runs.push_back(summariseRun("/r/np2", runOf(2, 4, 1800, 0.5)));
        RunEntry unreadable;
        unreadable.problem = "no run_start";
        runs.push_back(unreadable);
        const std::vector<ScalingPoint> points = scalingPoints(runs);
        QCOMPARE(int(points.size()), 3);
        QCOMPARE(points[0].gpus, 1);
        QCOMPARE(points[1].gpus, 2);
        QCOMPARE(points[2].gpus, 4);
        QCOMPARE(points[0].efficiency, 1.0);
        QVERIFY(std::abs(points[1].efficiency - 0.9) < 1e-12);
        QVERIFY(std::abs(points[2].efficiency - 0.75) < 1e-12);
        QCOMPARE(points[2].tokensPerSecondPerGpu, 1500.0);
    }

    void recipeKeyIgnoresNameAndOutput()
    {
        const json a = startFields("a", 1)["config"];
        json b = startFields("b", 2)["config"];
        QCOMPARE(recipeKey(a), recipeKey(b));
        QCOMPARE(firstDifference(recipeKey(a), recipeKey(b)), std::string());
        b["training"]["micro_batch"] = 4;
        QVERIFY(recipeKey(a) != recipeKey(b));
        QCOMPARE(firstDifference(recipeKey(a), recipeKey(b)), std::string("training.micro_batch"));
        b.erase("method");
        QCOMPARE(firstDifference(recipeKey(a), recipeKey(b)), std::string("method"));
    }

    void predictionRoundTripsThroughRunStart()
    {
        const RunPrediction prediction{
            "CPU: 2 cores", 300000000, 4000.0, 0.25, 280000000, -1, 290000000};
        RunHistory history;
        history.apply(eventOf(EventType::RunStart, kStart, startFields("p", 1, prediction)));
        QVERIFY(history.start()->prediction.has_value());
        const RunPrediction& read = *history.start()->prediction;
        QCOMPARE(read.device, prediction.device);
        QCOMPARE(read.peakBytesPerRank, prediction.peakBytesPerRank);
        QCOMPARE(read.tokensPerSecond, prediction.tokensPerSecond);
        QCOMPARE(read.stepSeconds, prediction.stepSeconds);
        QCOMPARE(read.loadBytesPerRank, prediction.loadBytesPerRank);
        QCOMPARE(read.checkpointBytesPerRank, -1); // not predicted: not written
        QCOMPARE(read.exportBytesPerRank, prediction.exportBytesPerRank);
        QVERIFY(read.gpu.empty());
        QCOMPARE(read.peakMeasure, PeakMeasure::Resident);
        // A GPU run's prediction names its preset and what its bytes are.
        RunPrediction gpu = prediction;
        gpu.gpu = "H100-SXM";
        gpu.peakMeasure = PeakMeasure::Allocated;
        const auto back = RunPrediction::fromJson(gpu.toJson());
        QCOMPARE(back->gpu, std::string("H100-SXM"));
        QCOMPARE(back->peakMeasure, PeakMeasure::Allocated);
        QCOMPARE(measuredOverPredicted(2000, read.tokensPerSecond), 0.5);
        QVERIFY(std::isnan(measuredOverPredicted(2000, -1)));
    }

    // What the runs list and the Compare page show as a run's method: the
    // preference objective names itself, with the method under it.
    void methodNamesTheObjective_data()
    {
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("objective"); // empty: no objective field (older runs)
        QTest::addColumn<QString>("shown");
        QTest::newRow("LoRA") << "lora"
                              << ""
                              << "lora";
        QTest::newRow("LoRA, sft") << "lora"
                                   << "sft"
                                   << "lora";
        QTest::newRow("DPO on LoRA") << "lora"
                                     << "dpo"
                                     << "dpo (lora)";
        QTest::newRow("DPO on QLoRA") << "qlora"
                                      << "dpo"
                                      << "dpo (qlora)";
    }

    void methodNamesTheObjective()
    {
        QFETCH(QString, method);
        QFETCH(QString, objective);
        QFETCH(QString, shown);
        json fields = startFields("run", 1);
        fields["config"]["method"] = method.toStdString();
        if (!objective.isEmpty())
            fields["config"]["objective"] = objective.toStdString();
        RunHistory history;
        history.apply(eventOf(EventType::RunStart, kStart, fields));
        QCOMPARE(QString::fromStdString(history.start()->method), shown);
    }

    void catalogFindsAndSummarisesRuns()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string root = dir.path().toStdString();
        StepRecord step;
        step.step = 1;
        step.loss = 2.5;
        step.tokens = 500;
        step.stepSeconds = 0.25;
        step.tokensPerSecond = 2000;
        step.memPeakBytes = 1 << 20;
        writeRun(root + "/a/done",
            {line(EventType::RunStart, kStart, startFields("done", 2)),
                line(EventType::Step, kStart + 1, step.toFields()),
                line(EventType::RunEnd, kStart + 9, {{"status", "completed"}})});
        writeRun(root + "/b",
            {line(EventType::RunStart, kStart, startFields("going", 1)),
                line(EventType::Step, kStart + 3, step.toFields())});
        writeRun(root + "/c", {"not json at all"});
        // Events inside a checkpoint folder are not a run of their own.
        writeRun(root + "/b/checkpoints/step-1",
            {line(EventType::RunStart, kStart, startFields("x", 1))});
        std::ofstream(root + "/b/events.rank1.jsonl") << "";
        std::ofstream(root + "/b/events.rank10.jsonl") << "";

        const std::vector<RunEntry> runs = scanRuns(root);
        QCOMPARE(int(runs.size()), 3);
        QCOMPARE(runs[0].name, std::string("done"));
        QCOMPARE(runs[0].state, std::string("completed"));
        QCOMPARE(runs[0].worldSize, 2);
        QCOMPARE(runs[0].method, std::string("lora"));
        QCOMPARE(runs[0].durationSeconds, 9.0);
        QCOMPARE(runs[0].tokensPerSecond, 2000.0);
        QCOMPARE(runs[0].peakBytes, int64_t{1 << 20});
        QCOMPARE(runs[0].lastLoss, 2.5);
        QCOMPARE(runs[1].state, std::string("running")); // no pid: nothing says it is gone
        QCOMPARE(runs[1].durationSeconds, 3.0);
        QVERIFY2(
            runs[2].problem.find("no run_start") != std::string::npos, runs[2].problem.c_str());

        const auto ranks = rankEventFiles(root + "/b");
        QCOMPARE(int(ranks.size()), 2);
        QCOMPARE(ranks[0].first, 1);
        QCOMPARE(ranks[1].first, 10);
        QVERIFY(findRunFolders(root + "/nothing-here").empty());
    }

    // Only what was appended is read; a folder reused by a new run starts
    // over; the other ranks' streams are read for the runs asked for.
    void liveCatalogFollowsGrowingRuns()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string run = dir.path().toStdString() + "/run";
        writeRun(run, {line(EventType::RunStart, kStart, startFields("live", 2))});
        LiveCatalog catalog;
        catalog.setRoot(dir.path().toStdString());
        QCOMPARE(catalog.refresh(), std::set<std::string>{run});
        QVERIFY(catalog.refresh().empty()); // nothing new
        StepRecord step;
        step.loss = 2.0;
        std::ofstream(run + "/events.jsonl", std::ios::app)
            << line(EventType::Step, kStart + 1, (step.step = 1, step.toFields())) << "\n";
        std::ofstream(run + "/events.rank1.jsonl")
            << line(EventType::Step, kStart + 1, step.toFields()) << "\n";
        QCOMPARE(catalog.refresh(), std::set<std::string>{run});
        QCOMPARE(catalog.history(run)->lastStep(), int64_t{1});
        QVERIFY(catalog.rankHistories(run).empty()); // not asked for
        catalog.setRanksRead({run});
        QCOMPARE(catalog.refresh(), std::set<std::string>{run});
        QCOMPARE(int(catalog.rankHistories(run).size()), 1);
        QCOMPARE(catalog.rankHistories(run)[0].first, 1);
        QCOMPARE(catalog.rankHistories(run)[0].second->lastStep(), int64_t{1});

        writeRun(run, {line(EventType::RunStart, kStart + 100, startFields("again", 1))});
        QCOMPARE(catalog.refresh(), std::set<std::string>{run});
        QCOMPARE(catalog.history(run)->lastStep(), int64_t{0});
        QCOMPARE(catalog.entries().front().name, std::string("again"));

        std::filesystem::remove_all(run);
        QCOMPARE(catalog.refresh(), std::set<std::string>{run});
        QVERIFY(catalog.entries().empty());
    }

    void runWhoseTrainerIsGoneIsLost()
    {
        RunHistory history;
        json fields = startFields("gone", 1);
        fields["host"] = tb::common::hostName();
        fields["pid"] = 999999999LL; // above any pid_max: no such process
        history.apply(eventOf(EventType::RunStart, kStart, fields));
        QCOMPARE(runState(history), std::string("lost"));
    }
};

QTEST_APPLESS_MAIN(TestRunCompare)
#include "test_run_compare.moc"
