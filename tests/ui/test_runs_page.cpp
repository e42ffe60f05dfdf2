// The Runs page under Xvfb: it follows a run's event file as it grows (the
// file written here line by line, as a trainer does), drops a followed run
// when another folder is opened, reports unreadable lines, and starts and
// stops a real run of the trainer through tunebench-cli launch.
#include "../support/endless_run.h"
#include "../support/event_lines.h"
#include "../support/qt_test_paths.h"
#include "metrics/event.h"
#include "metrics/step_record.h"
#include "runs/run_charts.h"
#include "runs/run_follower.h"
#include "runs/run_launcher.h"
#include "runs/run_view.h"
#include "runs/runs_page.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using nlohmann::json;
using tb::metrics::EventType;
using tb::metrics::makeEvent;
using tb::test::appendLine;
using tb::test::stepLine;
using tb::test::writeEndlessRunConfig;
using tb::ui::RunsPage;

namespace {

std::string runStart()
{
    return makeEvent(EventType::RunStart, 0, 1.0e9,
        {{"run_id", "demo"}, {"world_size", 2}, {"config", json::object()},
            {"model",
                {{"name", "stories260K"}, {"params_total", 260000}, {"params_trainable", 8192}}},
            {"global_batch", 16}, {"total_steps", 8}, {"sharding", "zero3"}})
        .dump();
}

// A run's history with every curve of the charts: steps with memory, a
// validation loss and the planner's prediction.
tb::metrics::RunHistory historyWithEveryCurve()
{
    tb::metrics::RunPrediction prediction;
    prediction.tokensPerSecond = 2500.0;
    prediction.peakBytesPerRank = 450000000;
    tb::metrics::RunHistory history;
    history.apply(*tb::metrics::parseEvent(makeEvent(EventType::RunStart, 0, 1.0e9,
        {{"run_id", "demo"}, {"world_size", 1}, {"config", json::object()},
            {"prediction",
                prediction.toJson()}}).dump()));
    for (int number = 1; number <= 3; ++number)
        history.apply(*tb::metrics::parseEvent(stepLine(number, 2000.0, 300000000, 400000000)));
    history.apply(*tb::metrics::parseEvent(
        makeEvent(EventType::Eval, 0, 1.0e9 + 2, {{"step", 2}, {"loss", 2.5}}).dump()));
    return history;
}

QCPGraph* graphNamed(const QCustomPlot& plot, const QString& name)
{
    for (int i = 0; i < plot.graphCount(); ++i)
        if (plot.graph(i)->name() == name)
            return plot.graph(i);
    return nullptr;
}

} // namespace

class TestRunsPage : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QDir().mkpath(tb::test::qBuildPath("screenshots"));
    }

    void followsAGrowingEventFile()
    {
        const QString folder = m_dir.filePath(QStringLiteral("growing"));
        QVERIFY(QDir().mkpath(folder));
        const QString events = folder + QStringLiteral("/events.jsonl");
        appendLine(events, runStart());
        for (int number = 1; number <= 3; ++number)
            appendLine(events, stepLine(number, 2000.0, 300000000, 400000000));

        RunsPage page;
        page.resize(1200, 800);
        page.show();
        page.followRunFolder(folder);
        QTRY_COMPARE(page.charts()->lossPointCount(), 3);
        QCOMPARE(page.charts()->throughputPointCount(), 3);
        QCOMPARE(page.charts()->memoryPointCount(), 3);
        QVERIFY2(page.summaryText().contains(QStringLiteral("step 3 of 8")),
            qPrintable(page.summaryText()));
        QVERIFY(page.summaryText().contains(QStringLiteral("2 ranks, zero3")));
        QVERIFY(page.summaryText().endsWith(QStringLiteral("running")));
        // Written without a pid: nothing this page could signal.
        QVERIFY(!page.canStop());
        QVERIFY2(page.stopRun().contains(QStringLiteral("names no pid")),
            qPrintable(page.messageTexts().join('\n')));

        // The trainer goes on: two steps, an evaluation, a warning, and a
        // line torn by a crash that the next writer closed.
        appendLine(events, stepLine(4, 2000.0, 300000000, 400000000));
        appendLine(events, stepLine(5, 2000.0, 300000000, 400000000));
        appendLine(
            events, makeEvent(EventType::Eval, 0, 1.0e9, {{"step", 5}, {"loss", 2.6}}).dump());
        appendLine(events,
            makeEvent(EventType::Warning, 0, 1.0e9, {{"message", "a warning from the trainer"}})
                .dump());
        appendLine(events, "{\"schema\":1,\"type\":\"step\",\"ti");
        QTRY_COMPARE(page.charts()->lossPointCount(), 5);
        QCOMPARE(page.charts()->evalPointCount(), 1);
        const QStringList messages = page.messageTexts().mid(1); // after the refused stop
        QCOMPARE(messages.size(), 2);
        QVERIFY2(messages[0].contains(
                     QStringLiteral("[warning, after step 5] a warning from the trainer")),
            qPrintable(messages[0]));
        QVERIFY2(messages[1].startsWith(QStringLiteral("[unreadable, after step 5] ")),
            qPrintable(messages[1]));
        QVERIFY2(messages[1].contains(events + QStringLiteral(":9")), qPrintable(messages[1]));

        appendLine(events,
            makeEvent(EventType::RunEnd, 0, 1.0e9, {{"status", "completed"}, {"steps", 5}}).dump());
        QTRY_VERIFY(page.summaryText().endsWith(QStringLiteral("completed")));
        QVERIFY(page.summaryText().contains(QStringLiteral("validation loss 2.6000 at step 5")));
    }

    void anotherFolderReplacesTheRun()
    {
        const QString first = m_dir.filePath(QStringLiteral("first"));
        const QString second = m_dir.filePath(QStringLiteral("second"));
        QVERIFY(QDir().mkpath(first) && QDir().mkpath(second));
        appendLine(first + "/events.jsonl", runStart());
        for (int number = 1; number <= 4; ++number)
            appendLine(first + "/events.jsonl", stepLine(number, 2000.0, 300000000, 400000000));
        appendLine(second + "/events.jsonl", runStart());
        appendLine(second + "/events.jsonl", stepLine(1, 2000.0, 300000000, 400000000));

        RunsPage page;
        page.followRunFolder(first);
        QTRY_COMPARE(page.charts()->lossPointCount(), 4);
        page.followRunFolder(second);
        QCOMPARE(page.charts()->lossPointCount(), 0); // cleared at once
        QTRY_COMPARE(page.charts()->lossPointCount(), 1);
        // Nothing from the first folder arrives late.
        QTest::qWait(3 * tb::ui::RunFollower::kPollMilliseconds);
        QCOMPARE(page.charts()->lossPointCount(), 1);
        QCOMPARE(page.followedFolder(), QDir(second).absolutePath());
    }

    // A file of endless unreadable lines and a page note: the list keeps the
    // latest rows, each bounded, under a first row counting the others
    // (review M5); before, every line became a row.
    void messagesListStaysBounded()
    {
        tb::ui::RunView view;
        const int rows = tb::ui::RunView::kMaxMessageRows;
        const int total = rows * 3 + 7;
        QVector<tb::metrics::StreamItem> items;
        for (int line = 1; line <= total; ++line) {
            items.push_back({uint64_t(line), 0, std::nullopt,
                "line " + std::to_string(line) + std::string(8000, 'x')});
            if (line % 1000 == 0 || line == total) // in batches, as a follower reads them
                view.addLines(std::exchange(items, {}));
        }
        view.addNote(QStringLiteral("a note of the page"));
        const QStringList texts = view.messageTexts();
        QCOMPARE(texts.size(), rows + 1);
        QCOMPARE(texts.first(),
            QStringLiteral("... and %1 earlier message(s), not shown").arg(total + 1 - rows));
        QVERIFY2(texts[texts.size() - 2].contains(QStringLiteral("line %1x").arg(total)),
            qPrintable(texts[texts.size() - 2].left(80)));
        QCOMPARE(texts.last(), QStringLiteral("a note of the page"));
        for (const QString& text : texts)
            QVERIFY(text.size() < int(tb::metrics::RunHistory::kMaxMessageBytes) + 80);
    }

    void replacedFileStopsFollowing()
    {
        const QString folder = m_dir.filePath(QStringLiteral("replaced"));
        QVERIFY(QDir().mkpath(folder));
        const QString events = folder + QStringLiteral("/events.jsonl");
        appendLine(events, runStart());
        appendLine(events, stepLine(1, 2000.0, 300000000, 400000000));
        appendLine(events, stepLine(2, 2000.0, 300000000, 400000000));
        RunsPage page;
        page.followRunFolder(folder);
        QTRY_COMPARE(page.charts()->lossPointCount(), 2);
        // Another run started over in the same folder: the file shrank.
        QFile file(events);
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write(QByteArray::fromStdString(runStart() + "\n"));
        file.close();
        QTRY_VERIFY(!page.messageTexts().isEmpty());
        QVERIFY2(page.messageTexts().last().contains(QStringLiteral("shrank")),
            qPrintable(page.messageTexts().last()));
        QVERIFY(page.messageTexts().last().contains(QStringLiteral("stopped following")));
    }

    // Every curve takes the raster engine's line drawer (a pen at most a
    // pixel wide): a wider pen is stroked as a polygon, which for a long
    // run's jagged loss costs tens of milliseconds a replot, four replots a
    // second while a run is followed.
    void curvesAreDrawnOnePixelWide_data()
    {
        QTest::addColumn<QString>("curve");
        for (const char* curve : {"training loss", "validation loss", "tokens/s", "predicted",
                 "resident", "peak", "predicted peak"})
            QTest::addRow("%s", curve) << QString::fromLatin1(curve);
    }

    void curvesAreDrawnOnePixelWide()
    {
        QFETCH(QString, curve);
        tb::ui::RunCharts charts;
        charts.showHistory(historyWithEveryCurve());
        const QCPGraph* graph = graphNamed(charts, curve);
        QVERIFY2(graph, qPrintable(curve));
        QVERIFY(graph->dataCount() > 0);
        QVERIFY2(graph->pen().widthF() <= 1.0, qPrintable(QString::number(graph->pen().widthF())));
    }

    // A diverged run writes a not-finite loss as null (docs/EVENTS.md): a
    // step's and an evaluation's are marked on the loss panel, with the
    // mark in its legend, and the finite losses are drawn as before.
    void notFiniteLossesAreMarked()
    {
        tb::metrics::RunHistory history = historyWithEveryCurve();
        json diverged = json::parse(stepLine(4, 2000.0));
        diverged["loss"] = nullptr;
        history.apply(*tb::metrics::parseEvent(diverged.dump()));
        history.apply(*tb::metrics::parseEvent(
            makeEvent(EventType::Eval, 0, 1.0e9 + 5, {{"step", 4}, {"loss", nullptr}}).dump()));
        tb::ui::RunCharts charts;
        charts.showHistory(history);
        QCOMPARE(charts.lossPointCount(), 3);
        QCOMPARE(charts.evalPointCount(), 1);
        QCOMPARE(charts.notFiniteLossCount(), 2);
        const QCPGraph* marks = graphNamed(charts, QStringLiteral("loss not finite"));
        QVERIFY(marks);
        QCOMPARE(marks->data()->at(0)->key, 4.0);
        QVERIFY(marks->data()->at(0)->value <= marks->valueAxis()->range().upper);
        auto* legend =
            qobject_cast<QCPLegend*>(marks->valueAxis()->axisRect()->insetLayout()->elementAt(0));
        QVERIFY(legend && legend->hasItemWithPlottable(marks));
        charts.resize(900, 600);
        charts.replot();
        QVERIFY(
            charts.grab().save(tb::test::qBuildPath("screenshots/runs_page_loss_not_finite.png")));
        charts.showHistory(historyWithEveryCurve());
        QCOMPARE(charts.notFiniteLossCount(), 0);
        QVERIFY(!legend->hasItemWithPlottable(marks));
    }

    void badConfigIsRefused()
    {
        const QString config = m_dir.filePath(QStringLiteral("bad.yaml"));
        QFile file(config);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("model: ./m\ntraining:\n  micro_batch: -3\n");
        file.close();
        RunsPage page;
        QString error;
        QVERIFY(!page.startRun(config, 1, &error));
        QVERIFY2(error.contains(config) && error.contains(QStringLiteral("micro_batch")),
            qPrintable(error));
        QVERIFY(!page.launcher()->isRunning());
    }

    // A LoRA run of stories260K on the demo instructions, two ranks under
    // ZeRO-3, followed live and stopped from the page.
    void startsAndStopsARealRun()
    {
        if (const QString why = tb::test::whyNoEndlessRun(); !why.isEmpty())
            TB_SKIP(why);
        const QString runDir = m_dir.filePath(QStringLiteral("real-run"));
        const QString config = m_dir.filePath(QStringLiteral("real.yaml"));
        QVERIFY(writeEndlessRunConfig(
            config, runDir, QStringLiteral("distributed: {sharding: zero3}\n")));

        RunsPage page;
        page.resize(1400, 900);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        page.launcher()->setCliProgram(tb::test::qBuildPath("app/cli/tunebench-cli"));
        QSignalSpy finished(&page, &RunsPage::runFinished);
        QString error;
        QVERIFY2(page.startRun(config, 2, &error), qPrintable(error));
        QVERIFY(page.launcher()->isRunning());
        QTRY_VERIFY_WITH_TIMEOUT(page.charts()->lossPointCount() >= 6, 120000);
        QVERIFY(page.charts()->evalPointCount() >= 2);
        QVERIFY2(page.summaryText().contains(QStringLiteral("2 ranks, zero3")),
            qPrintable(page.summaryText()));
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/runs_page.png")));

        QVERIFY(page.canStop());
        QCOMPARE(page.stopRun(), QString());
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(finished.first().first().toInt(), 128 + 15); // stopped by SIGTERM, as a shell says
        QTRY_VERIFY(page.history().end().has_value());
        QCOMPARE(page.history().end()->status, std::string("stopped"));
        QVERIFY(page.history().lastCheckpointStep() >= 6);
        QVERIFY2(page.summaryText().endsWith(QStringLiteral("stopped"))
                || page.summaryText().contains(QStringLiteral("· stopped")),
            qPrintable(page.summaryText()));
        qInfo("followed %lld steps live, stopped with a checkpoint at step %lld",
            static_cast<long long>(page.history().lastStep()),
            static_cast<long long>(page.history().lastCheckpointStep()));
    }

    // A run started from a terminal, only followed here: the page stops it
    // through the pid its run_start names.
    void stopsARunStartedElsewhere()
    {
        if (const QString why = tb::test::whyNoEndlessRun(); !why.isEmpty())
            TB_SKIP(why);
        const QString runDir = m_dir.filePath(QStringLiteral("terminal-run"));
        const QString config = m_dir.filePath(QStringLiteral("terminal.yaml"));
        QVERIFY(writeEndlessRunConfig(config, runDir));
        QProcess trainer;
        QVERIFY(tb::test::startTrainer(trainer, config));

        RunsPage page;
        page.followRunFolder(runDir);
        QTRY_VERIFY_WITH_TIMEOUT(page.charts()->lossPointCount() >= 3, 120000);
        QCOMPARE(page.history().start()->pid, static_cast<long long>(trainer.processId()));
        QVERIFY2(page.canStop(), "the Stop button is disabled");
        QCOMPARE(page.stopRun(), QString());
        QVERIFY(trainer.waitForFinished(60000));
        QTRY_VERIFY(page.history().end().has_value());
        QCOMPARE(page.history().end()->status, std::string("stopped"));
        QVERIFY(!page.canStop());
        QVERIFY2(page.stopRun().contains(QStringLiteral("the run has ended (stopped)")),
            qPrintable(page.messageTexts().join('\n')));
    }

private:
    QTemporaryDir m_dir;
};

QTEST_MAIN(TestRunsPage)
#include "test_runs_page.moc"
