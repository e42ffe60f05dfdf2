// The Compare page under Xvfb: the runs model under QAbstractItemModelTester,
// overlaid curves that follow event files as they grow, the x-axes,
// smoothing and log scale, every rank of a run, the scaling chart with the
// ideal line and the predicted curve, the end-of-run notification, and a
// real scaling probe of stories260K at 1, 2 and 4 ranks.
#include "../support/endless_run.h"
#include "../support/event_lines.h"
#include "../support/qt_test_paths.h"
#include "compare/compare_page.h"
#include "compare/overlay_charts.h"
#include "compare/prediction_table.h"
#include "compare/rank_charts.h"
#include "compare/run_end_notifier.h"
#include "compare/runs_model.h"
#include "compare/scaling_chart.h"
#include "compare/scaling_probe_panel.h"
#include "metrics/run_catalog.h"
#include "metrics/run_compare.h"
#include "runs/run_launcher.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QSignalSpy>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

using nlohmann::json;
using tb::metrics::EventType;
using tb::metrics::makeEvent;
using tb::test::appendLine;
using tb::ui::ComparePage;
using tb::ui::OverlayCharts;

namespace {

constexpr double kStart = 1.0e9;

struct FakeRun {
    QString name;
    int worldSize = 1;
    double learningRate = 1e-3;
    double predictedRate = -1; // tokens/s in run_start's prediction, -1: none
};

std::string startLine(const FakeRun& run)
{
    json fields = {{"run_id", run.name.toStdString()}, {"world_size", run.worldSize},
        {"config",
            {{"name", run.name.toStdString()}, {"method", "lora"},
                {"training", {{"learning_rate", run.learningRate}}},
                {"output", {{"dir", "/elsewhere/" + run.name.toStdString()}}}}},
        {"model", {{"name", "stories260K"}}}, {"total_steps", 50}};
    if (run.predictedRate > 0) {
        fields["prediction"] = tb::metrics::RunPrediction{"CPU (test)", 300 << 20,
            run.predictedRate, 0.5, 280 << 20, -1, 290 << 20}
                                   .toJson();
        fields["load"] = {{"peak_resident_bytes", 294 << 20}};
    }
    return makeEvent(EventType::RunStart, 0, kStart, fields).dump();
}

// A step with `tokens` tokens in 0.5 s (the first in 1 s), loss 4 - 0.05 x step.
std::string stepOf(int step, int64_t tokens, int rank = 0, double seconds = 0.5)
{
    tb::metrics::StepRecord record;
    record.step = step;
    record.loss = 4.0 - 0.05 * step;
    record.learningRate = 1e-3;
    record.tokens = tokens;
    record.stepSeconds = step == 1 ? 2 * seconds : seconds;
    record.tokensPerSecond = double(tokens) / record.stepSeconds;
    record.memPeakBytes = (300LL << 20) + rank * (10LL << 20);
    return makeEvent(EventType::Step, rank, kStart + step, record.toFields()).dump();
}

QString writeRun(const QString& root, const FakeRun& run, int steps, int64_t tokensPerStep)
{
    const QString dir = root + QLatin1Char('/') + run.name;
    QDir().mkpath(dir);
    appendLine(dir + "/events.jsonl", startLine(run));
    for (int step = 1; step <= steps; ++step)
        appendLine(dir + "/events.jsonl", stepOf(step, tokensPerStep));
    return dir;
}

} // namespace

class TestComparePage : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QDir().mkpath(tb::test::qBuildPath("screenshots"));
        QStandardPaths::setTestModeEnabled(true); // the page keeps its folder in the settings
        QCoreApplication::setOrganizationName(QStringLiteral("tunebench-test-compare"));
    }

    void runsModelUnderTheModelTester()
    {
        const QString root = m_dir.filePath(QStringLiteral("listed"));
        writeRun(root, {"alpha", 1}, 3, 1000);
        writeRun(root, {"beta", 2}, 5, 1800);
        ComparePage page;
        QAbstractItemModelTester modelTester(
            page.runsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester proxyTester(
            page.runsProxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        page.setRunsFolder(root);
        QTRY_COMPARE(page.runsModel()->rowCount(), 2);
        // A third run appears while the page is open; one is ticked.
        writeRun(root, {"gamma", 4}, 2, 3000);
        QTRY_COMPARE(page.runsModel()->rowCount(), 3);
        QVERIFY(page.runsModel()->setData(
            page.runsModel()->index(1, tb::ui::RunsModel::Name), Qt::Checked, Qt::CheckStateRole));
        QCOMPARE(page.runsModel()->pickedDirs(), QStringList{QDir(root).absoluteFilePath("beta")});
        // Sorted by tokens/s as numbers; filtered by any column's text.
        QSortFilterProxyModel* proxy = page.runsProxy();
        proxy->sort(tb::ui::RunsModel::TokensPerSecond, Qt::DescendingOrder);
        QCOMPARE(
            proxy->index(0, tb::ui::RunsModel::Name).data().toString(), QStringLiteral("gamma"));
        QCOMPARE(
            proxy->index(2, tb::ui::RunsModel::Name).data().toString(), QStringLiteral("alpha"));
        proxy->setFilterFixedString(QStringLiteral("bet"));
        QCOMPARE(proxy->rowCount(), 1);
        QCOMPARE(proxy->index(0, tb::ui::RunsModel::Name)
                     .data(Qt::CheckStateRole)
                     .value<Qt::CheckState>(),
            Qt::Checked);
        // The run goes on: its row changes in place, the tick stays.
        appendLine(root + "/beta/events.jsonl", stepOf(6, 1800));
        QTRY_COMPARE(
            proxy->index(0, tb::ui::RunsModel::Steps).data().toString(), QStringLiteral("6/50"));
        QCOMPARE(page.runsModel()->pickedDirs().size(), 1);
    }

    void overlayFollowsTheEventFiles()
    {
        const QString root = m_dir.filePath(QStringLiteral("overlay"));
        const QString a = writeRun(root, {"lr-1e-3", 1}, 4, 1000);
        const QString b = writeRun(root, {"lr-3e-3", 1, 3e-3}, 2, 1000);
        appendLine(a + "/events.jsonl",
            makeEvent(EventType::Eval, 0, kStart + 4.5, {{"step", 4}, {"loss", 3.9}}).dump());
        ComparePage page;
        page.resize(1400, 1000);
        page.setRunsFolder(root);
        QTRY_COMPARE(page.runsModel()->rowCount(), 2);
        page.setPicked(a, true);
        page.setPicked(b, true);
        OverlayCharts* overlay = page.overlay();
        QTRY_COMPARE(overlay->runCount(), 2);
        QCOMPARE(overlay->curve(0, OverlayCharts::LossPanel)->dataCount(), 4);
        QCOMPARE(overlay->curve(1, OverlayCharts::LossPanel)->dataCount(), 2);
        QCOMPARE(overlay->evalPoints(0)->dataCount(), 1);
        for (int panel = 0; panel < OverlayCharts::PanelCount; ++panel)
            QCOMPARE(overlay->curve(0, OverlayCharts::Panel(panel))->dataCount(), 4);

        // The second run goes on: its curve follows.
        appendLine(b + "/events.jsonl", stepOf(3, 1000));
        QTRY_COMPARE(overlay->curve(1, OverlayCharts::LossPanel)->dataCount(), 3);
        QCOMPARE(overlay->curve(1, OverlayCharts::LossPanel)->data()->at(2)->value, 4.0 - 0.05 * 3);

        // Tokens seen on the x-axis: cumulative tokens, the validation point
        // where its step is.
        page.xAxisChoice()->setCurrentIndex(
            page.xAxisChoice()->findData(int(tb::metrics::XAxis::Tokens)));
        QCOMPARE(overlay->curve(0, OverlayCharts::LossPanel)->data()->at(3)->key, 4000.0);
        QCOMPARE(overlay->evalPoints(0)->data()->at(0)->key, 4000.0);
        page.xAxisChoice()->setCurrentIndex(
            page.xAxisChoice()->findData(int(tb::metrics::XAxis::WallSeconds)));
        QCOMPARE(overlay->curve(0, OverlayCharts::LossPanel)->data()->at(3)->key, 4.0);

        // Smoothing is the de-biased EMA of the losses; the learning rate is not smoothed.
        page.smoothingSlider()->setValue(60);
        const std::vector<double> expected = tb::metrics::smoothed({3.95, 3.9, 3.85, 3.8}, 0.6);
        for (int i = 0; i < 4; ++i)
            QVERIFY(qAbs(overlay->curve(0, OverlayCharts::LossPanel)->data()->at(i)->value
                        - expected[size_t(i)])
                < 1e-12);
        QCOMPARE(overlay->curve(0, OverlayCharts::LearningRatePanel)->data()->at(0)->value, 1e-3);
        page.logLossBox()->setChecked(true);
        QCOMPARE(overlay->curve(0, OverlayCharts::LossPanel)->valueAxis()->scaleType(),
            QCPAxis::stLogarithmic);

        // Unticked: gone from the overlay.
        page.setPicked(a, false);
        QTRY_COMPARE(overlay->runCount(), 1);
        QCOMPARE(overlay->curve(0, OverlayCharts::LossPanel)->dataCount(), 3);
    }

    void everyRankOfARun()
    {
        const QString root = m_dir.filePath(QStringLiteral("ranks"));
        const QString dir = writeRun(root, {"two-ranks", 2}, 3, 1000);
        // Rank 1 is a straggler: 0.9 s a step.
        for (int step = 1; step <= 3; ++step)
            appendLine(dir + "/events.rank1.jsonl", stepOf(step, 1000, 1, 0.9));
        ComparePage page;
        page.setRunsFolder(root);
        QTRY_COMPARE(page.runsModel()->rowCount(), 1);
        page.setPicked(dir, true);
        QTRY_COMPARE(page.rankCharts()->rankCount(), 2);
        QCOMPARE(page.rankCharts()->stepTimeCurve(0)->data()->at(2)->value, 0.5);
        QCOMPARE(page.rankCharts()->stepTimeCurve(1)->data()->at(2)->value, 0.9);
        appendLine(dir + "/events.rank1.jsonl", stepOf(4, 1000, 1, 0.9));
        QTRY_COMPARE(page.rankCharts()->stepTimeCurve(1)->dataCount(), 4);
    }

    // Each rank's measured peak beside its own prediction (run_start of that
    // rank); a rank whose run_start predicts nothing has no level.
    void everyRankAgainstItsPrediction()
    {
        const QString root = m_dir.filePath(QStringLiteral("rank-predictions"));
        const QString dir = writeRun(root, {"predicted", 3, 1e-3, 2000}, 3, 1000);
        json rank1 = json::parse(startLine({"predicted", 3, 1e-3, 2000}));
        rank1["rank"] = 1;
        rank1["prediction"] =
            tb::metrics::RunPrediction{"CPU (test)", 320 << 20, 2000, 0.5}.toJson();
        appendLine(dir + "/events.rank1.jsonl", rank1.dump());
        for (int rank = 1; rank <= 2; ++rank) {
            for (int step = 1; step <= 3; ++step)
                appendLine(
                    dir + QString("/events.rank%1.jsonl").arg(rank), stepOf(step, 1000, rank));
        }
        ComparePage page;
        page.setRunsFolder(root);
        QTRY_COMPARE(page.runsModel()->rowCount(), 1);
        page.setPicked(dir, true);
        QTRY_COMPARE(page.rankCharts()->rankCount(), 3);
        const tb::ui::RankCharts* charts = page.rankCharts();
        QTRY_COMPARE(charts->predictedPeakCurve(1)->dataCount(), 2);
        QCOMPARE(charts->predictedPeakCurve(0)->data()->at(0)->value, 300.0 / 1024.0);
        QCOMPARE(charts->predictedPeakCurve(1)->data()->at(1)->value, 320.0 / 1024.0);
        QCOMPARE(charts->predictedPeakCurve(1)->data()->at(1)->key, 3.0);
        QCOMPARE(charts->predictedPeakCurve(2)->dataCount(), 0);
        QCOMPARE(charts->predictedPeakCurve(1)->pen().style(), Qt::DotLine);
    }

    void scalingChartPlotsMeasuredIdealAndPredicted()
    {
        const QString root = m_dir.filePath(QStringLiteral("scaling"));
        // Per-GPU rates 2000, 1800, 1500: 100 %, 90 %, 75 %.
        const QString one = writeRun(root, {"np1", 1, 1e-3, 2100}, 4, 1000);
        const QString two = writeRun(root, {"np2", 2, 1e-3, 4000}, 4, 1800);
        const QString four = writeRun(root, {"np4", 4, 1e-3, 7600}, 4, 3000);
        const QString other = writeRun(root, {"other-lr", 2, 5e-3}, 4, 1800);
        ComparePage page;
        page.setRunsFolder(root);
        QTRY_COMPARE(page.runsModel()->rowCount(), 4);
        for (const QString& dir : {four, one, two, other})
            page.setPicked(dir, true);
        tb::ui::ScalingChart* chart = page.scalingChart();
        QTRY_COMPARE(chart->measured()->dataCount(), 3);
        QCOMPARE(chart->measured()->data()->at(0)->key, 1.0);
        QCOMPARE(chart->measured()->data()->at(2)->value, 6000.0);
        QCOMPARE(chart->efficiency()->data()->at(1)->value, 90.0);
        QCOMPARE(chart->efficiency()->data()->at(2)->value, 75.0);
        QCOMPARE(chart->predicted()->dataCount(), 3);
        QCOMPARE(chart->predicted()->data()->at(2)->value, 7600.0);
        QCOMPARE(chart->ideal()->data()->at(1)->value, 8000.0); // 2000 x 4
        QVERIFY2(page.scalingNote().contains(
                     QStringLiteral("other-lr (differs in training.learning_rate)")),
            qPrintable(page.scalingNote()));
        // The measured point moves while the run goes on.
        appendLine(four + "/events.jsonl", stepOf(5, 4000));
        QTRY_VERIFY(chart->measured()->data()->at(2)->value > 6000.0);
        // Measured against predicted, with the ratio.
        QTRY_COMPARE(page.predictionTable()->rowCount(), 4);
        QCOMPARE(page.predictionTable()->item(1, tb::ui::PredictionTable::RateRatio)->text(),
            QStringLiteral("0.95x"));
        QCOMPARE(page.predictionTable()->item(1, tb::ui::PredictionTable::LoadPeakRatio)->text(),
            QStringLiteral("1.05x"));
        QCOMPARE(
            page.predictionTable()->item(1, tb::ui::PredictionTable::PredictedExportPeak)->text(),
            QStringLiteral("290.0 MiB"));
        QCOMPARE(page.predictionTable()->item(1, tb::ui::PredictionTable::ExportPeakRatio)->text(),
            QStringLiteral("–")); // no export ran
        QCOMPARE(page.predictionTable()->item(3, tb::ui::PredictionTable::Device)->text(),
            QStringLiteral("no prediction in its run_start"));
    }

    void followedRunEndingIsNotified()
    {
        const QString root = m_dir.filePath(QStringLiteral("notify"));
        const QString followed = writeRun(root, {"followed", 1}, 2, 1000);
        const QString unfollowed = writeRun(root, {"unfollowed", 1}, 2, 1000);
        ComparePage page;
        QSignalSpy ended(page.notifier(), &tb::ui::RunEndNotifier::runEnded);
        QSignalSpy status(&page, &ComparePage::statusMessage);
        page.setRunsFolder(root);
        QTRY_COMPARE(page.runsModel()->rowCount(), 2);
        page.setPicked(followed, true);
        for (const QString& dir : {unfollowed, followed})
            appendLine(dir + "/events.jsonl",
                makeEvent(EventType::RunEnd, 0, kStart + 10,
                    {{"status", dir == followed ? "failed" : "completed"}, {"message", "x"}})
                    .dump());
        QTRY_COMPARE(ended.count(), 1);
        QCOMPARE(ended.first().at(0).toString(), QDir(followed).absolutePath());
        QCOMPARE(ended.first().at(1).toString(), QStringLiteral("failed"));
        QVERIFY(!status.isEmpty());
        const QString message = status.last().first().toString();
        QVERIFY2(message.startsWith(QStringLiteral("followed failed after 2 steps")),
            qPrintable(message));
        // Where no notification service answers (Xvfb has none) the status
        // bar says so; where one does, it does not.
        QCOMPARE(message.contains(QStringLiteral("no desktop notification service")),
            page.notifier()->channel() == tb::ui::RunEndNotifier::Channel::StatusBarOnly);
        QTest::qWait(3 * tb::ui::CompareFollower::kPollMilliseconds);
        QCOMPARE(ended.count(), 1); // the unfollowed run's end is not news
    }

    // The scaling probe from the page: tunebench-cli scaling runs the LoRA
    // recipe of stories260K at 1, 2 and 4 ranks; the page picks the runs as
    // they appear and its curves follow their event files.
    void realScalingProbe()
    {
        if (const QString why = tb::test::whyNoEndlessRun(); !why.isEmpty())
            TB_SKIP(why);
        const QString root = m_dir.filePath(QStringLiteral("real"));
        QDir().mkpath(root);
        const QString config = m_dir.filePath(QStringLiteral("probe.yaml"));
        QVERIFY(tb::test::writeEndlessRunConfig(config, root + QStringLiteral("/unused")));
        ComparePage page;
        page.resize(1500, 1050);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        page.setRunsFolder(root);
        page.probe()->launcher()->setCliProgram(tb::test::qBuildPath("app/cli/tunebench-cli"));
        QSignalSpy finished(page.probe(), &tb::ui::ScalingProbePanel::probeFinished);
        QString outDir, error;
        QVERIFY2(page.probe()->start(
                     config, QStringLiteral("1,2,4"), kProbeSteps, root, &outDir, &error),
            qPrintable(error));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 500000);
        QCOMPARE(finished.first().first().toInt(), 0);
        QTRY_COMPARE(page.scalingChart()->measured()->dataCount(), 3);
        QTRY_COMPARE(page.comparedRuns().size(), 3);
        // Every curve is what the run's event file holds.
        for (int run = 0; run < 3; ++run) {
            const tb::ui::ComparedRun& compared = page.comparedRuns()[run];
            const auto history =
                tb::metrics::readRunHistory((compared.dir + "/events.jsonl").toStdString());
            QVERIFY(history.ok());
            QCOMPARE(int(history->steps().size()), kProbeSteps);
            QTRY_COMPARE(
                page.overlay()->curve(run, OverlayCharts::LossPanel)->dataCount(), kProbeSteps);
            for (int i = 0; i < kProbeSteps; ++i)
                QCOMPARE(page.overlay()->curve(run, OverlayCharts::LossPanel)->data()->at(i)->value,
                    history->steps()[size_t(i)].loss);
            // The page reads the folder once a second: the last evaluation may
            // reach it after the file was read here.
            QTRY_COMPARE(
                page.overlay()->evalPoints(run)->dataCount(), int(history->evals().size()));
            QCOMPARE(history->start()->worldSize, QList<int>({1, 2, 4})[run]);
        }
        page.rankRunChoice()->setCurrentIndex(2);
        QTRY_COMPARE(page.rankCharts()->rankCount(), 4);
        auto* tabs = page.findChild<QTabWidget*>(QStringLiteral("compareTabs"));
        page.smoothingSlider()->setValue(50);
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/compare_overlay.png")));
        tabs->setCurrentIndex(2);
        QTest::qWait(200);
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/compare_scaling.png")));
        tabs->setCurrentIndex(1);
        QTest::qWait(200);
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/compare_ranks.png")));
        tabs->setCurrentIndex(3);
        QTest::qWait(200);
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/compare_prediction.png")));
        // Every run of the probe trained on this CPU and recorded the planner's estimate.
        QCOMPARE(page.predictionTable()->rowCount(), 3);
        for (int row = 0; row < 3; ++row) {
            QVERIFY2(page.predictionTable()
                         ->item(row, tb::ui::PredictionTable::Device)
                         ->text()
                         .startsWith(QStringLiteral("CPU: ")),
                qPrintable(
                    page.predictionTable()->item(row, tb::ui::PredictionTable::Device)->text()));
            // The loading phase: measured by the run, predicted by the planner.
            QVERIFY(page.predictionTable()
                        ->item(row, tb::ui::PredictionTable::LoadPeakRatio)
                        ->text()
                        .endsWith('x'));
        }
        QCOMPARE(page.scalingChart()->predicted()->dataCount(), 4); // the planner at 1 to 4 ranks
        for (const tb::metrics::ScalingPoint& point :
            tb::metrics::scalingPoints(std::vector<tb::metrics::RunEntry>(
                page.runsModel()->runs().begin(), page.runsModel()->runs().end())))
            qInfo("%d ranks: %.0f tokens/s, %.0f per rank, efficiency %.2f", point.gpus,
                point.tokensPerSecond, point.tokensPerSecondPerGpu, point.efficiency);
    }

private:
    static constexpr int kProbeSteps = 6;
    QTemporaryDir m_dir;
};

QTEST_MAIN(TestComparePage)
#include "test_compare_page.moc"
