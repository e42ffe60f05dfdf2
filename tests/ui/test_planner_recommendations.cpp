// The Planner page's answers over alternatives: the what-if chart (where a
// plan stops fitting as one input grows) and the recommendations table
// (filtered, sorted numerically, and applied by a click).
#include "../support/qt_test_paths.h"
#include "planner_fixture.h"

#include "planner/recommendation_model.h"
#include "planner/what_if_chart.h"

#include "common/units.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableView>
#include <QTest>

using namespace tb;
using tb::test::child;
using tb::test::headlinePlan;
using tb::test::waitForRecommendations;
using tb::ui::PlannerPage;

class TestPlannerRecommendations : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
        QApplication::setApplicationName(QStringLiteral("test_planner_recommendations"));
        QSettings().clear();
        qputenv("TUNEBENCH_CALIBRATION",
            QByteArray::fromStdString(tb::test::buildPath("no-calibration.json")));
    }

    void whatIfShowsWhereItStopsFitting()
    {
        PlannerPage page;
        plan::PlanInput fitting = headlinePlan(QStringLiteral("llama-3-8b-full-2xa100-40gb-fsdp"));
        fitting.method = plan::Method::Lora; // full AdamW does not fit 2 x 40 GB at all
        page.setInput(fitting);
        page.setWhatIfAxis(plan::SweepAxis::MicroBatch);
        const ui::WhatIfChart* chart = page.whatIfChart();
        QVERIFY(chart->pointCount() >= 10);
        QVERIFY(chart->fittingPointCount() < chart->pointCount()); // 128 x 2048 cannot fit in 40 GB
        QVERIFY(page.largestFittingMicroBatch().has_value());
        QCOMPARE(chart->capacityGiB(), page.result()->usableBytes / common::kGiB);
        // The answer is the boundary: it fits, one more does not.
        plan::PlanInput in = page.input();
        in.microBatch = *page.largestFittingMicroBatch();
        page.setInput(in);
        QVERIFY(page.result()->fits);
        in.microBatch += 1;
        page.setInput(in);
        QVERIFY(!page.result()->fits);
        page.setWhatIfAxis(plan::SweepAxis::SeqLen);
        QVERIFY(chart->pointCount() >= 10);
        page.setWhatIfAxis(plan::SweepAxis::GpuCount);
        QVERIFY(chart->pointCount() >= 2);
    }

    // The memory axis stops near twice the capacity; what it cuts off is
    // said in words, and only then.
    void whatIfSaysWhatIsOffTheScale()
    {
        PlannerPage page;
        page.setInput(headlinePlan(QStringLiteral("llama-3.3-70b-lora-2xh100-fsdp")));
        page.setWhatIfAxis(plan::SweepAxis::MicroBatch);
        const ui::WhatIfChart* chart = page.whatIfChart();
        double highest = 0;
        for (const QCPGraphData& point : *chart->graph(0)->data())
            highest = std::max(highest, point.value);
        QVERIFY(highest > chart->yAxis->range().upper); // 70B at micro-batch 128 x 2048 tokens
        QVERIFY2(chart->offScaleNote().contains(QStringLiteral("at micro-batch 128")),
            qPrintable(chart->offScaleNote()));
        page.setWhatIfAxis(plan::SweepAxis::GpuCount); // memory only falls with more GPUs
        QVERIFY2(chart->offScaleNote().isEmpty(), qPrintable(chart->offScaleNote()));
    }

    void recommendationsTableFiltersAndApplies()
    {
        PlannerPage page;
        new QAbstractItemModelTester(page.recommendationModel(),
            QAbstractItemModelTester::FailureReportingMode::QtTest, &page);
        new QAbstractItemModelTester(page.recommendationFilter(),
            QAbstractItemModelTester::FailureReportingMode::QtTest, &page);
        new QAbstractItemModelTester(
            page.rejectedModel(), QAbstractItemModelTester::FailureReportingMode::QtTest, &page);
        page.setInput(headlinePlan(QStringLiteral("llama-3-8b-full-2xa100-40gb-fsdp")));
        QVERIFY(waitForRecommendations(page));
        QVERIFY(page.recommendationModel()->rowCount() > 0);
        QVERIFY(page.rejectedModel()->rowCount() > 0);

        // In the recommender's order (cost in 1 % bands, then fewer nodes) ...
        auto* filter = page.recommendationFilter();
        const auto costAt = [&](int row) {
            return filter->index(row, ui::RecommendationModel::Cost)
                .data(ui::RecommendationModel::kSortRole)
                .toDouble();
        };
        for (int row = 1; row < filter->rowCount(); ++row)
            QVERIFY(costAt(row - 1) <= costAt(row) * 1.0201);
        // ... and a header click sorts numerically, not alphabetically.
        page.recommendationView()->sortByColumn(ui::RecommendationModel::Cost, Qt::AscendingOrder);
        for (int row = 1; row < filter->rowCount(); ++row)
            QVERIFY(costAt(row - 1) <= costAt(row));
        page.recommendationView()->sortByColumn(ui::RecommendationModel::Rank, Qt::AscendingOrder);

        // One row per VM size by default; all options when unticked.
        const int bestOnly = filter->rowCount();
        child<QCheckBox>(&page, "bestPerVmCheck")->setChecked(false);
        QVERIFY(filter->rowCount() > bestOnly);
        QCOMPARE(filter->rowCount(), page.recommendationModel()->rowCount());

        // Options Tunebench's trainer cannot run (MI300X) are marked, and hidden on request.
        const auto trainerRunsAt = [&](int row) {
            return filter->index(row, ui::RecommendationModel::Trainer)
                .data(ui::RecommendationModel::kSortRole)
                .toBool();
        };
        bool anyNotRunnable = false;
        for (int row = 0; row < filter->rowCount(); ++row)
            anyNotRunnable = anyNotRunnable || !trainerRunsAt(row);
        QVERIFY(anyNotRunnable);
        child<QCheckBox>(&page, "trainerRunnableCheck")->setChecked(true);
        QVERIFY(filter->rowCount() > 0);
        for (int row = 0; row < filter->rowCount(); ++row)
            QVERIFY(trainerRunsAt(row));
        child<QCheckBox>(&page, "trainerRunnableCheck")->setChecked(false);

        child<QSpinBox>(&page, "maxNodesSpin")->setValue(1);
        QVERIFY(filter->rowCount() > 0);
        for (int row = 0; row < filter->rowCount(); ++row)
            QCOMPARE(filter->index(row, ui::RecommendationModel::Nodes)
                         .data(ui::RecommendationModel::kSortRole)
                         .toInt(),
                1);

        // Clicking a row applies that option to the plan and the charts.
        QTableView* view = page.recommendationView();
        const QModelIndex first = filter->index(0, ui::RecommendationModel::VmSize);
        const QString vm = first.data().toString();
        emit view->clicked(first);
        QCOMPARE(QString::fromStdString(page.input().vmSize), vm);
        QCOMPARE(QString::fromStdString(page.result()->vmSize), vm);
    }
};

QTEST_MAIN(TestPlannerRecommendations)
#include "test_planner_recommendations.moc"
