#include "../support/qt_test_paths.h"
#include "main_window.h"
#include "planner/breakdown_chart.h"
#include "planner/component_colors.h"
#include "planner/plan_form.h"
#include "planner/planner_page.h"
#include "planner/recommendation_model.h"
#include "planner_fixture.h"

#include "common/atomic_file.h"
#include "common/units.h"
#include "launch/run_data_profile.h"
#include "plan/catalog.h"
#include "plan/trainer_support.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QCompleter>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

using namespace tb;
using tb::test::child;
using tb::test::headlinePlan;
using tb::test::waitForRecommendations;
using tb::ui::PlannerPage;

namespace {

double segmentSumGiB(const ui::BreakdownChart* chart)
{
    double sum = 0;
    for (int i = 0; i < plan::kMemoryCategoryCount; ++i)
        sum += chart->segmentGiB(static_cast<plan::MemoryCategory>(i));
    return sum;
}

// The main window at a screenshot's size on its Planner page, shown.
PlannerPage* shownPlanner(ui::MainWindow& window)
{
    window.resize(1600, 1000);
    window.showPage(QStringLiteral("planner"));
    window.show();
    if (!QTest::qWaitForWindowExposed(&window))
        return nullptr;
    return qobject_cast<PlannerPage*>(window.page(QStringLiteral("planner")));
}

} // namespace

// Drives the real Planner page widgets and checks what its charts and item
// models hold against the planner's own answer.
class TestPlannerPage : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
        QApplication::setApplicationName(QStringLiteral("test_planner_page"));
        QSettings().clear();
        // No calibration file of the user's: each test sets its own.
        qputenv("TUNEBENCH_CALIBRATION",
            QByteArray::fromStdString(tb::test::buildPath("no-calibration.json")));
        m_screenshotDir = tb::test::qBuildPath("screenshots");
        QDir().mkpath(m_screenshotDir);
    }

    void opensOnAReadyPlan()
    {
        PlannerPage page;
        QVERIFY2(page.errorText().isEmpty(), qPrintable(page.errorText()));
        QVERIFY(page.result().has_value());
        const plan::PlanResult& result = *page.result();
        QVERIFY(result.perGpuBytes > 0);
        QVERIFY(page.verdictText().startsWith(
            result.fits ? QStringLiteral("Fits") : QStringLiteral("Does not fit")));
        // The chart stacks exactly the planner's components.
        QVERIFY(
            qAbs(segmentSumGiB(page.breakdownChart()) - result.perGpuBytes / common::kGiB) < 1e-9);
        QCOMPARE(page.breakdownChart()->capacityGiB(), result.usableBytes / common::kGiB);
        for (int i = 0; i < plan::kMemoryCategoryCount; ++i) {
            const auto category = static_cast<plan::MemoryCategory>(i);
            QCOMPARE(page.breakdownChart()->segmentGiB(category),
                result.categoryBytes(category) / common::kGiB);
        }
    }

    // The bar marks the three peaks where the planner puts them, and names them.
    void marksTheThreePeaks_data()
    {
        QTest::addColumn<int>("level");
        QTest::addRow("allocated") << int(plan::PeakLevel::Allocated);
        QTest::addRow("reserved") << int(plan::PeakLevel::Reserved);
        QTest::addRow("device used") << int(plan::PeakLevel::Device);
    }
    void marksTheThreePeaks()
    {
        QFETCH(int, level);
        PlannerPage page;
        const auto peak = static_cast<plan::PeakLevel>(level);
        const double bytes = page.result()->peaks.at(peak);
        QCOMPARE(page.breakdownChart()->peakMarkGiB(peak), bytes / common::kGiB);
        QVERIFY2(page.breakdownChart()->peaksText().contains(
                     QString::fromStdString(common::formatBytes(bytes))),
            qPrintable(page.breakdownChart()->peaksText()));
    }

    // A plan on a calibrated device applies the calibration and says so.
    void showsWhenCalibrated()
    {
        PlannerPage page;
        QVERIFY(!page.detailsText().contains(QStringLiteral("Calibrated")));
        plan::CalibrationRun run;
        run.plannedTokensPerSecond = 1000;
        run.measuredTokensPerSecond = 500;
        run.plannedUtilisation = 0.4;
        plan::Calibration calibration;
        calibration.set(plan::calibrateDevice(page.result()->gpuId, {run, run}));
        page.setCalibration(calibration);
        QVERIFY2(page.detailsText().contains(QStringLiteral("calibrated by 2 runs on ")),
            qPrintable(page.detailsText()));
        QCOMPARE(page.result()->figure("utilisation")->value, 0.2);
    }

    void hoverTextExplainsComponents()
    {
        PlannerPage page;
        const QString tip = page.breakdownChart()->segmentToolTip(plan::MemoryCategory::Weights);
        const plan::MemoryComponent* weights = page.result()->component("weights");
        QVERIFY(weights);
        QVERIFY2(tip.contains(QString::fromStdString(weights->explanation).toHtmlEscaped()),
            qPrintable(tip));
    }

    void microBatchMovesActivations_data()
    {
        QTest::addColumn<int>("smaller");
        QTest::addColumn<int>("larger");
        QTest::addRow("1 -> 2") << 1 << 2;
        QTest::addRow("2 -> 8") << 2 << 8;
        QTest::addRow("4 -> 16") << 4 << 16;
    }
    void microBatchMovesActivations()
    {
        QFETCH(int, smaller);
        QFETCH(int, larger);
        PlannerPage page;
        auto* spin = child<QSpinBox>(&page, "microBatchSpin");
        spin->setValue(smaller);
        const double before = page.breakdownChart()->segmentGiB(plan::MemoryCategory::Activations);
        spin->setValue(larger);
        QCOMPARE(page.input().microBatch, larger);
        const double after = page.breakdownChart()->segmentGiB(plan::MemoryCategory::Activations);
        QVERIFY2(after > before, qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(after)));
        QCOMPARE(page.breakdownChart()->segmentGiB(plan::MemoryCategory::Weights) > 0, true);
    }

    void modelPickerFiltersAsYouType()
    {
        PlannerPage page;
        auto* combo = child<QComboBox>(&page, "modelCombo");
        QCompleter* completer = combo->completer();
        completer->setCompletionPrefix(QStringLiteral("70b"));
        QStringList found;
        for (int row = 0; row < completer->completionCount(); ++row) {
            completer->setCurrentRow(row);
            found << completer->currentCompletion();
        }
        QVERIFY2(
            found.contains(QStringLiteral("Llama-3.3-70B-Instruct")), qPrintable(found.join(',')));
        QVERIFY(found.contains(QStringLiteral("Llama-2-70B")));
        QVERIFY(!found.contains(QStringLiteral("Mistral-7B-v0.1")));
    }

    // Each model's tooltip names its Hugging Face repository and, for a
    // family the trainer does not compute, why not: the words of the same
    // family list the trainer refuses a config.json by.
    void modelPickerTooltipSaysWhatTheTrainerRuns_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("repo");
        QTest::addColumn<bool>("runs");
        QTest::addRow("Llama") << "Llama-3.1-8B"
                               << "meta-llama/Llama-3.1-8B" << true;
        QTest::addRow("gpt-oss") << "gpt-oss-20b"
                                 << "openai/gpt-oss-20b" << false;
    }
    void modelPickerTooltipSaysWhatTheTrainerRuns()
    {
        QFETCH(QString, model);
        QFETCH(QString, repo);
        QFETCH(bool, runs);
        PlannerPage page;
        auto* combo = child<QComboBox>(&page, "modelCombo");
        const int row = combo->findText(model);
        QVERIFY2(row >= 0, qPrintable(model));
        const QString tip = combo->itemData(row, Qt::ToolTipRole).toString();
        const common::Result<plan::Catalog> catalog = plan::Catalog::loadDefault();
        QVERIFY(catalog.ok());
        const model::ModelSpec* spec = catalog->findModel(model.toStdString());
        QVERIFY(spec);
        const plan::TrainerSupport trainer = plan::tunebenchTrainerSupport(*spec);
        QCOMPARE(trainer.runs, runs);
        QCOMPARE(tip,
            runs ? repo : repo + QStringLiteral("\n") + QString::fromStdString(trainer.reason));
        QVERIFY2(runs || tip.contains(QStringLiteral("gpt-oss")), qPrintable(tip));
    }

    void unknownModelIsAClearError()
    {
        PlannerPage page;
        auto* combo = child<QComboBox>(&page, "modelCombo");
        combo->setEditText(QStringLiteral("lama-3-8b"));
        QVERIFY2(
            page.errorText().contains(QStringLiteral("lama-3-8b")), qPrintable(page.errorText()));
        QVERIFY2(page.errorText().contains(QStringLiteral("Llama-3-8B"), Qt::CaseInsensitive),
            qPrintable(page.errorText()));
        combo->setEditText(QStringLiteral("Llama-3-8B"));
        QVERIFY(page.errorText().isEmpty());
    }

    void plansPersistAcrossRestarts()
    {
        {
            PlannerPage page;
            child<QSpinBox>(&page, "microBatchSpin")->setValue(7);
            child<QSpinBox>(&page, "seqLenSpin")->setValue(3072);
        }
        PlannerPage reopened;
        QCOMPARE(reopened.input().microBatch, 7);
        QCOMPARE(reopened.input().seqLen, 3072);
    }

    void savesLoadsAndExports()
    {
        QTemporaryDir dir;
        PlannerPage page;
        page.setInput(headlinePlan(QStringLiteral("llama-3.3-70b-lora-2xh100-fsdp")));
        const QString planPath = dir.filePath(QStringLiteral("plan.yaml"));
        QVERIFY(page.savePlan(planPath).ok());

        PlannerPage other;
        QVERIFY(other.openPlan(planPath).ok());
        QCOMPARE(other.input().model, std::string("Llama-3.3-70B-Instruct"));
        QVERIFY(other.input().sharding == plan::Sharding::FsdpFull);

        QVERIFY(waitForRecommendations(page));
        const QString report = dir.filePath(QStringLiteral("report.md"));
        const auto status = page.exportReport(report);
        QVERIFY2(status.ok(), status.ok() ? "" : status.error().toString().c_str());
        QFile md(report);
        QVERIFY(md.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(md.readAll());
        QVERIFY(text.contains(QStringLiteral("## Memory per GPU")));
        QVERIFY(text.contains(QStringLiteral("report-memory.png")));
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("report-memory.png"))));
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("report-what-if.png"))));

        const QString csvPath = dir.filePath(QStringLiteral("options.csv"));
        QVERIFY(page.exportRecommendationsCsv(csvPath).ok());
        QFile csv(csvPath);
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(csv.readAll()).split('\n', Qt::SkipEmptyParts);
        QVERIFY(lines.first().startsWith(QStringLiteral("rank,vm_size,")));
        QCOMPARE(lines.size() - 1, page.recommendationModel()->rowCount());
    }

    void importsFrameworkConfigs()
    {
        QTemporaryDir dir;
        const QString deepspeed = dir.filePath(QStringLiteral("ds.json"));
        QFile ds(deepspeed);
        QVERIFY(ds.open(QIODevice::WriteOnly));
        ds.write(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}},
                     "bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 3,
                     "gradient_accumulation_steps": 8})");
        ds.close();
        PlannerPage page;
        const auto status = page.importDeepSpeed(deepspeed);
        QVERIFY2(status.ok(), status.ok() ? "" : status.error().toString().c_str());
        QVERIFY(page.input().sharding == plan::Sharding::Zero3);
        QVERIFY(page.input().offload == plan::Offload::Optimizer);
        QCOMPARE(page.input().microBatch, 3);
        QCOMPARE(page.input().gradAccum, 8);
        QVERIFY(page.result()->cpuBytesPerNode > 0); // offloaded states shown in CPU memory

        const QString accelerate = dir.filePath(QStringLiteral("accelerate.yaml"));
        QFile acc(accelerate);
        QVERIFY(acc.open(QIODevice::WriteOnly));
        acc.write("distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n"
                  "mixed_precision: bf16\nnum_machines: 2\nnum_processes: 16\n");
        acc.close();
        const auto imported = page.importAccelerate(accelerate);
        QVERIFY2(imported.ok(), imported.ok() ? "" : imported.error().toString().c_str());
        QVERIFY(page.input().sharding == plan::Sharding::FsdpGradOp);
        QCOMPARE(page.input().nodes, 2);

        QFile broken(deepspeed);
        QVERIFY(broken.open(QIODevice::WriteOnly | QIODevice::Truncate));
        broken.write(R"({"zero_optimization": {"stage": 7}})");
        broken.close();
        const auto bad = page.importDeepSpeed(deepspeed);
        QVERIFY(!bad.ok());
        QVERIFY2(QString::fromStdString(bad.error().toString()).contains(QStringLiteral("stage")),
            bad.error().toString().c_str());
        QVERIFY(page.input().sharding == plan::Sharding::FsdpGradOp); // unchanged
    }

    void coloursAreTheSameEverywhere()
    {
        PlannerPage page;
        auto* explanations = page.findChild<QTableView*>(QStringLiteral("explanationView"));
        QVERIFY(explanations);
        QAbstractItemModel* model = explanations->model();
        new QAbstractItemModelTester(
            model, QAbstractItemModelTester::FailureReportingMode::QtTest, &page);
        int coloured = 0;
        for (const plan::MemoryComponent& component : page.result()->memory) {
            if (component.bytes <= 0)
                continue;
            const QModelIndex index = model->index(coloured++, 0);
            QCOMPARE(index.data().toString(), QString::fromStdString(component.label));
            QCOMPARE(index.data(Qt::DecorationRole).value<QColor>(),
                ui::categoryColor(component.category));
        }
        QVERIFY(coloured > 3);
    }

    void badPlanFileNamesTheField()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("bad.yaml"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("version: 1\nmicro_batch: -3\n");
        file.close();
        PlannerPage page;
        const plan::PlanInput before = page.input();
        const auto status = page.openPlan(path);
        QVERIFY(!status.ok());
        QVERIFY2(QString::fromStdString(status.error().toString())
                     .contains(QStringLiteral("micro_batch")),
            status.error().toString().c_str());
        QCOMPARE(page.input().microBatch, before.microBatch);
    }

    // "Plan a run": the run's data read on a worker, the plan on its longest
    // row, the form saying so; a batch setting changed plans the fields again.
    void plansARunOnItsOwnData()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath("run.yaml");
        const std::string yaml = "model: " + tb::test::sourcePath("resources/demo/stories260K")
            + "\nmethod: lora\nprecision: bf16-mixed\ndevice: cuda\n"
              "data:\n  train: "
            + tb::test::sourcePath("resources/demo/tiny_instructions.jsonl")
            + "\n  sequence_length: 512\n  packing: false\n"
              "training:\n  micro_batch: 4\n  epochs: 2\n";
        QVERIFY(common::writeFileAtomic(path.toStdString(), yaml).ok());
        ui::MainWindow window;
        PlannerPage* page = shownPlanner(window);
        QVERIFY(page);
        QSignalSpy planned(page, &PlannerPage::runPlanned);
        page->planRun(path);
        QVERIFY(planned.wait(60000));
        QCOMPARE(planned.first().first().toBool(), true);

        // The same profile the CLI's --from-run plans (launch::planInputOfRunFile).
        const auto expected = launch::planInputOfRunFile(path.toStdString(), page->input(), true);
        QVERIFY(expected.ok());
        const plan::DataProfile& d = page->input().data;
        QVERIFY(d.measured());
        QCOMPARE(d.rows, 64LL);
        QCOMPARE(d.longestRow, expected->data.longestRow);
        QVERIFY(d.longestRow < 512);
        auto* note = child<QLabel>(page, "runDataLabel");
        QVERIFY(note->isVisible());
        QVERIFY2(
            note->text().contains(QStringLiteral("the longest row %1 of 512").arg(d.longestRow)),
            qPrintable(note->text()));
        QVERIFY(!child<QDoubleSpinBox>(page, "datasetSamplesSpin")->isEnabled());
        QVERIFY(page->result().has_value());
        const double ownData = page->result()->categoryBytes(plan::MemoryCategory::Activations);
        QVERIFY(waitForRecommendations(*page));
        QVERIFY(window.grab().save(m_screenshotDir + QStringLiteral("/planner_run_data.png")));

        // Another sequence length: the run's batches no longer hold.
        child<QSpinBox>(page, "seqLenSpin")->setValue(1024);
        QVERIFY(!page->input().data.measured());
        QVERIFY(child<QDoubleSpinBox>(page, "datasetSamplesSpin")->isEnabled());
        QVERIFY(note->text().contains(QStringLiteral("batched for other settings")));
        QVERIFY(page->result()->categoryBytes(plan::MemoryCategory::Activations) > ownData);
    }

    void screenshotsOfHeadlinePlans_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addRow("mistral") << QStringLiteral("mistral-7b-lora-4xv100-ddp");
        QTest::addRow("llama3-8b") << QStringLiteral("llama-3-8b-full-2xa100-40gb-fsdp");
        QTest::addRow("llama3.3-70b") << QStringLiteral("llama-3.3-70b-lora-2xh100-fsdp");
        QTest::addRow("mixtral") << QStringLiteral("mixtral-8x7b-qlora-1xa100");
        QTest::addRow("hf-trainer") << QStringLiteral("llama-3.1-8b-qlora-hf-trainer-1xa10");
    }
    void screenshotsOfHeadlinePlans()
    {
        QFETCH(QString, name);
        ui::MainWindow window;
        PlannerPage* page = shownPlanner(window);
        QVERIFY(page);
        page->setInput(headlinePlan(name));
        QVERIFY(waitForRecommendations(*page));
        QTest::qWait(100);
        const QString path = m_screenshotDir + QStringLiteral("/planner_%1.png").arg(name);
        QVERIFY(window.grab().save(path));
        child<QTabWidget>(page, "plannerTabs")->setCurrentIndex(1);
        QTest::qWait(50);
        QVERIFY(window.grab().save(
            m_screenshotDir + QStringLiteral("/planner_%1_whatif.png").arg(name)));
    }

private:
    QString m_screenshotDir;
};

QTEST_MAIN(TestPlannerPage)
#include "test_planner_page.moc"
