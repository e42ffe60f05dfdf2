// The Planner page's answers over alternatives: the what-if chart (where a
// plan stops fitting as one input grows) and the recommendations table
// (filtered, sorted numerically, and applied by a click).
#include "../support/qt_test_paths.h"
#include "planner_fixture.h"

#include "planner/recommendation_model.h"
#include "planner/recommendation_runner.h"
#include "planner/what_if_chart.h"

#include "common/units.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QFile>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <system_error>

using namespace tb;
using tb::test::child;
using tb::test::headlinePlan;
using tb::test::waitForRecommendations;
using tb::ui::PlannerPage;

// The shipped presets with `copies` more of every VM size in vms.yaml, each
// copy's name suffixed: a sweep over it takes that many times longer.
static bool writeLargeCatalog(const QString& dir, int copies)
{
    const QString shipped = QString::fromStdString(tb::test::sourcePath("presets"));
    std::error_code error;
    std::filesystem::copy(shipped.toStdString(), dir.toStdString(),
        std::filesystem::copy_options::recursive
            | std::filesystem::copy_options::overwrite_existing,
        error);
    if (error)
        return false;
    QFile in(shipped + QStringLiteral("/hardware/vms.yaml"));
    if (!in.open(QIODevice::ReadOnly))
        return false;
    const QString text = QString::fromUtf8(in.readAll());
    const qsizetype list = text.indexOf(QStringLiteral("\nvms:\n"));
    if (list < 0)
        return false;
    const QString entries = text.mid(list + 6);
    QString out = text;
    static const QRegularExpression name(
        QStringLiteral("^(  - name: \\S+)$"), QRegularExpression::MultilineOption);
    for (int copy = 1; copy <= copies; ++copy)
        out += QString(entries).replace(name, QStringLiteral("\\1_copy") + QString::number(copy));
    QFile vms(dir + QStringLiteral("/hardware/vms.yaml"));
    return vms.open(QIODevice::WriteOnly | QIODevice::Truncate)
        && vms.write(out.toUtf8()) == out.toUtf8().size();
}

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

    // Closing the window while a sweep runs: the page's members die before
    // its children, the runner among them, so a sweep must not read any of
    // them (AddressSanitizer's GUI stage saw the catalog read after free).
    // The catalog here holds 40 copies of every VM size, so the sweep is
    // still running when the page goes.
    void closingThePageDuringASweepIsSafe()
    {
        QTemporaryDir presets;
        QVERIFY(presets.isValid());
        QVERIFY(writeLargeCatalog(presets.path(), 40));
        qputenv("TUNEBENCH_PRESETS_DIR", presets.path().toUtf8());
        auto* page = new PlannerPage;
        qunsetenv("TUNEBENCH_PRESETS_DIR");
        QVERIFY2(page->errorText().isEmpty(), qPrintable(page->errorText()));
        auto* runner = page->findChild<ui::RecommendationRunner*>();
        QVERIFY(runner);
        int reported = 0;
        int total = 0;
        connect(runner, &ui::RecommendationRunner::progressed, this, [&](int done, int of) {
            reported = done;
            total = of;
        });
        page->setInput(headlinePlan(QStringLiteral("llama-3.3-70b-lora-2xh100-fsdp")));
        QVERIFY(QTest::qWaitFor([&] { return reported > 0; }, 20000));
        QVERIFY2(reported < total && runner->isRunning(),
            qPrintable(QStringLiteral("the sweep ended before the page closed: %1 of %2")
                           .arg(reported)
                           .arg(total)));
        delete page;
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
