// The Planner form against the option table and the rule book: every bound
// widget has its option's range and gives back both ends unclamped, the form
// opens on the planner's defaults, refused offloads are greyed out, and
// choosing our trainer as the engine shows its phases.
#include "../support/qt_test_paths.h"
#include "planner/plan_form.h"
#include "planner/planner_page.h"
#include "planner_fixture.h"

#include "common/text.h"
#include "common/units.h"
#include "plan/plan_options.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QTest>

using namespace tb;
using tb::ui::PlannerPage;

using tb::test::child;

class TestPlanForm : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear(); // no plan persisted by an earlier run of a suite
        qputenv("TUNEBENCH_CALIBRATION",
            QByteArray::fromStdString(tb::test::buildPath("no-calibration.json")));
    }

    // Planned as Tunebench's trainer runs it, the page names every phase
    // and the one that sets the peak; the reference engines plan forward and
    // backward and the optimizer step.
    void showsOurTrainersPhases()
    {
        PlannerPage page; // opens on whatever plan the page last persisted
        auto* engine = child<QComboBox>(&page, "engineCombo");
        engine->setCurrentIndex(engine->findData(QStringLiteral("reference")));
        QVERIFY(page.input().engine == plan::Engine::Reference);
        QVERIFY2(page.detailsText().contains(QStringLiteral("forward and backward "))
                && page.detailsText().contains(QStringLiteral("optimizer step ")),
            qPrintable(page.detailsText()));
        QVERIFY(!page.detailsText().contains(QStringLiteral("Phases: load")));
        engine->setCurrentIndex(engine->findData(QStringLiteral("tunebench")));
        QVERIFY(page.input().engine == plan::Engine::Tunebench);
        const plan::PlanResult& r = *page.result();
        QCOMPARE(r.phases.size(), size_t(5));
        const QString peak =
            QStringLiteral("<b>%1 %2</b>")
                .arg(QString::fromStdString(std::string(plan::phaseLabel(r.peakPhase()->phase)))
                         .toLower(),
                    QString::fromStdString(common::formatBytes(r.perGpuBytes)));
        QVERIFY2(page.detailsText().contains(peak), qPrintable(page.detailsText()));
        page.resize(1500, 1000);
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/planner_tunebench_phases.png")));
        engine->setCurrentIndex(
            engine->findData(QStringLiteral("reference"))); // what the next test opens on
    }

    // The Hugging Face Trainer's evaluation batch: offered with that engine
    // only, planned as a phase that can set the peak (a QLoRA run trained
    // at micro-batch 1 and evaluated at the Trainer's default 8).
    void plansTheTrainersEvaluation()
    {
        PlannerPage page;
        auto* engine = child<QComboBox>(&page, "engineCombo");
        auto* evalBatch = child<QSpinBox>(&page, "evalBatchSpin");
        engine->setCurrentIndex(engine->findData(QStringLiteral("tunebench")));
        QVERIFY(!evalBatch->isEnabled());
        engine->setCurrentIndex(engine->findData(QStringLiteral("hf-trainer")));
        QVERIFY(evalBatch->isEnabled());
        child<QSpinBox>(&page, "microBatchSpin")->setValue(1);
        evalBatch->setValue(8);
        QCOMPARE(page.input().evalBatch, 8);
        QVERIFY(page.result());
        QCOMPARE(page.result()->peakPhase()->phase, plan::Phase::Evaluation);
        QVERIFY2(page.detailsText().contains(QStringLiteral("evaluation")),
            qPrintable(page.detailsText()));
        page.resize(1500, 1000);
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/planner_hf_evaluation.png")));
        engine->setCurrentIndex(engine->findData(QStringLiteral("tunebench")));
        QCOMPARE(evalBatch->value(), 0); // no stale evaluation under another engine
        engine->setCurrentIndex(
            engine->findData(QStringLiteral("reference"))); // what the next test opens on
    }

    // A plan whose GPUs fit but whose node cannot hold what its ranks load
    // says that it is the host, and how much, not a GPU figure.
    void saysWhenTheHostDecides()
    {
        PlannerPage page;
        plan::PlanInput in;
        in.model = "Llama-3.3-70B-Instruct";
        in.method = plan::Method::Qlora;
        in.engine = plan::Engine::Tunebench;
        in.vmSize = "Standard_ND96amsr_A100_v4";
        in.gpusPerNode = 8;
        in.microBatch = 1;
        page.setInput(in);
        QVERIFY2(page.verdictText().contains(QStringLiteral("host memory")),
            qPrintable(page.verdictText()));
        QVERIFY2(page.detailsText().contains(QStringLiteral("loading the model needs")),
            qPrintable(page.detailsText()));
        QVERIFY2(page.detailsText().contains(QStringLiteral("host memory while loading")),
            qPrintable(page.detailsText()));
        in.engine = plan::Engine::Reference; // what the next test opens on
        page.setInput(in);
    }

    // Each widget bound to a row of the option table has that row's range,
    // and takes and gives back both of its ends unclamped (a plan file with
    // LoRA rank 8192 once came back from the form as 4096), as the CLI and
    // plan files do (test_plan_cli, test_plan_options).
    void formWidgetsFollowTheOptionTable()
    {
        PlannerPage page;
        ui::PlanForm* form = page.form();
        int bound = 0;
        for (QWidget* widget : form->findChildren<QWidget*>()) {
            const QVariant key = widget->property("planOption");
            if (!key.isValid())
                continue;
            ++bound;
            const plan::PlanOption& option = *plan::findPlanOption(key.toString().toStdString());
            const plan::OptionKind kind = plan::kindOf(option);
            if (kind != plan::OptionKind::Integer && kind != plan::OptionKind::Real)
                continue;
            double min = 0;
            double max = 0;
            if (const auto* spinBox = qobject_cast<QSpinBox*>(widget)) {
                min = spinBox->minimum();
                max = spinBox->maximum();
            } else if (const auto* realSpinBox = qobject_cast<QDoubleSpinBox*>(widget)) {
                min = realSpinBox->minimum();
                max = realSpinBox->maximum();
            }
            QCOMPARE(min, option.min);
            QCOMPARE(max, option.max);
            for (const double end : {option.min, option.max}) {
                plan::PlanInput in = form->input();
                if (option.key == "eval_batch") // the one engine that evaluates at its own batch
                    in.engine = plan::Engine::HfTrainer;
                QVERIFY(!plan::assignText(option, in, common::shortestNumber(end)));
                form->setInput(in);
                QCOMPARE(plan::valueText(option, form->input()), plan::valueText(option, in));
            }
        }
        QVERIFY2(bound >= 20, "the form's inputs are bound to the table");
        // The form opens on the planner's defaults, every option as PlanInput{} has it.
        form->setInput(plan::PlanInput{});
        for (const plan::PlanOption& option : plan::planOptions())
            QCOMPARE(
                plan::valueText(option, form->input()), plan::valueText(option, plan::PlanInput{}));
    }

    // The offloads the chosen sharding refuses are greyed out, and say why in
    // the rule book's words.
    void refusedOffloadsAreGreyedOut()
    {
        PlannerPage page;
        auto* sharding = child<QComboBox>(page.form(), "shardingCombo");
        auto* offload = child<QComboBox>(page.form(), "offloadCombo");
        const auto item = [offload](const char* value) {
            return qobject_cast<QStandardItemModel*>(offload->model())
                ->item(offload->findData(QString::fromLatin1(value)));
        };
        sharding->setCurrentIndex(sharding->findData(QStringLiteral("ddp")));
        QVERIFY(!item("optimizer+params")->isEnabled());
        QVERIFY2(item("optimizer+params")->toolTip().contains(QStringLiteral("zero3")),
            qPrintable(item("optimizer+params")->toolTip()));
        QVERIFY(item("optimizer")->isEnabled());
        sharding->setCurrentIndex(sharding->findData(QStringLiteral("fsdp-full")));
        QVERIFY(item("optimizer+params")->isEnabled());
        QVERIFY(!item("optimizer")->isEnabled()); // FSDP offloads everything or nothing
        sharding->setCurrentIndex(sharding->findData(QStringLiteral("zero3")));
        QVERIFY(item("optimizer+params")->isEnabled() && item("optimizer")->isEnabled());
    }

    // Double quantization is QLoRA's alone, and Tunebench's trainer always
    // does it: the box shows for QLoRA and is fixed on for our trainer.
    void doubleQuantIsQlorasAndFixedForOurTrainer()
    {
        PlannerPage page;
        auto* method = child<QComboBox>(page.form(), "methodCombo");
        auto* engine = child<QComboBox>(page.form(), "engineCombo");
        auto* doubleQuant = child<QCheckBox>(page.form(), "doubleQuantCheck");
        engine->setCurrentIndex(engine->findData(QStringLiteral("reference")));
        method->setCurrentIndex(method->findData(QStringLiteral("lora")));
        QVERIFY(!doubleQuant->isVisibleTo(page.form()));
        method->setCurrentIndex(method->findData(QStringLiteral("qlora")));
        QVERIFY(doubleQuant->isVisibleTo(page.form()) && doubleQuant->isEnabled());
        doubleQuant->setChecked(false);
        QCOMPARE(page.input().doubleQuant, false);
        page.resize(1500, 950);
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/planner_double_quant.png")));
        engine->setCurrentIndex(engine->findData(QStringLiteral("tunebench")));
        QVERIFY(!doubleQuant->isEnabled());
        QCOMPARE(page.input().doubleQuant, true);
        QVERIFY(plan::validatePlanInput(page.input()).ok());
    }

    // An imported DeepSpeed setting the form has no widget for stays in the plan.
    void keepsFrameworkSettings()
    {
        PlannerPage page;
        plan::PlanInput in = page.input();
        in.sharding = plan::Sharding::Zero2;
        in.deepspeed.reduceBucketSize = 1e8;
        in.deepspeed.overlapComm = true;
        page.setInput(in);
        QCOMPARE(page.input().deepspeed.reduceBucketSize, 1e8);
        QCOMPARE(page.input().deepspeed.overlapComm, std::optional<bool>(true));
    }
};

QTEST_MAIN(TestPlanForm)
#include "test_plan_form.moc"
