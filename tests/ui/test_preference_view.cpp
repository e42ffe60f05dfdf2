// The Runs page's DPO charts under Xvfb: they appear for a run whose steps
// carry the dpo object and not for a supervised one, draw a null figure as
// a gap and report a wrong type, and show a real DPO run of the trainer
// (presets/recipes/dpo.yaml) point for point as its events.jsonl holds it,
// with a screenshot.
#include "../support/event_lines.h"
#include "../support/qt_test_paths.h"
#include "../support/skip.h"
#include "compare/compare_page.h"
#include "compare/overlay_charts.h"
#include "compare/preference_overlay.h"
#include "compare/runs_model.h"
#include "metrics/event.h"
#include "metrics/step_record.h"
#include "runs/preference_charts.h"
#include "runs/run_charts.h"
#include "runs/run_view.h"
#include "runs/runs_page.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>

using nlohmann::json;
using tb::metrics::EventType;
using tb::metrics::makeEvent;
using tb::test::appendLine;
using tb::ui::PreferenceCharts;
using tb::ui::RunsPage;

namespace {

std::string runStart(const std::string& runId = "dpo", const std::string& objective = "dpo")
{
    json fields = {{"run_id", runId}, {"world_size", 1},
        {"config", {{"method", "lora"}, {"objective", objective}}},
        {"model", {{"name", "stories260K"}, {"params_total", 260000}}}, {"total_steps", 100}};
    return makeEvent(EventType::RunStart, 0, 1.0e9, fields).dump();
}

// A step, with `dpo` spliced in as JSON text (empty: a supervised step).
std::string step(int number, const QString& dpo)
{
    tb::metrics::StepRecord record;
    record.step = number;
    record.loss = 0.5 + 0.1 * (number % 3); // jagged, as a real per-step loss
    record.tokensPerSecond = 1000;
    std::string line = makeEvent(EventType::Step, 0, 1.0e9 + number, record.toFields()).dump();
    line.pop_back();
    if (!dpo.isEmpty())
        line += ",\"dpo\":" + dpo.toStdString();
    return line + "}";
}

QString figures(int number, const QString& margin)
{
    return QStringLiteral(R"({"rewards_chosen":%1,"rewards_rejected":%2,"rewards_margin":%3,)"
                          R"("rewards_accuracy":0.75,"logps_chosen":-40,"logps_rejected":-60,)"
                          R"("ref_logps_chosen":-41,"ref_logps_rejected":-59})")
        .arg(0.01 * number)
        .arg(-0.01 * number)
        .arg(margin);
}

PreferenceCharts* preferenceOf(const RunsPage& page)
{
    return page.findChild<PreferenceCharts*>();
}

// The events of `folder`'s events.jsonl of one type.
std::vector<json> eventsOf(const QString& folder, const std::string& type)
{
    QFile file(folder + QStringLiteral("/events.jsonl"));
    std::vector<json> found;
    if (!file.open(QIODevice::ReadOnly))
        return found;
    while (!file.atEnd()) {
        json event = json::parse(file.readLine().toStdString());
        if (event.at("type") == type)
            found.push_back(std::move(event));
    }
    return found;
}

// `graph`'s points equal (step, `scale` x dpo[`key`]) of each step event.
void compareToEvents(
    const QCPGraph* graph, const std::vector<json>& steps, const char* key, double scale)
{
    QCOMPARE(graph->dataCount(), int(steps.size()));
    for (int i = 0; i < graph->dataCount(); ++i) {
        const json& event = steps[size_t(i)];
        QCOMPARE(graph->data()->at(i)->key, event.at("step").get<double>());
        QCOMPARE(graph->data()->at(i)->value, scale * event.at("dpo").at(key).get<double>());
    }
}

} // namespace

class TestPreferenceView : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QDir().mkpath(tb::test::qBuildPath("screenshots"));
        QStandardPaths::setTestModeEnabled(
            true); // the Compare page keeps its folder in the settings
        QCoreApplication::setOrganizationName(QStringLiteral("tunebench-test-preference"));
    }

    void appearsOnlyForADpoRun_data()
    {
        QTest::addColumn<QString>("secondMargin"); // the second step's rewards_margin as JSON text
        QTest::addColumn<bool>("dpo");
        QTest::addColumn<bool>("marginGap");
        QTest::addColumn<QString>("problem"); // a message the page lists, or empty
        QTest::addRow("supervised") << QString() << false << false << QString();
        QTest::addRow("dpo") << QStringLiteral("0.02") << true << false << QString();
        QTest::addRow("a null figure") << QStringLiteral("null") << true << true << QString();
        QTest::addRow("a figure of the wrong type")
            << QStringLiteral("\"0.02\"") << true << true
            << QStringLiteral(
                   "step 2: field 'dpo.rewards_margin': got \"0.02\", expected a number or null");
    }

    void appearsOnlyForADpoRun()
    {
        QFETCH(QString, secondMargin);
        QFETCH(bool, dpo);
        QFETCH(bool, marginGap);
        QFETCH(QString, problem);
        const QString folder = m_dir.filePath(QString::fromUtf8(QTest::currentDataTag()));
        QVERIFY(QDir().mkpath(folder));
        const QString events = folder + QStringLiteral("/events.jsonl");
        appendLine(events, runStart());
        for (int number = 1; number <= 3; ++number) {
            const QString margin = number == 2 ? secondMargin : QString::number(0.01 * number);
            appendLine(events, step(number, dpo ? figures(number, margin) : QString()));
        }

        RunsPage page;
        page.resize(1400, 900);
        page.show();
        page.followRunFolder(folder);
        QTRY_COMPARE(page.charts()->lossPointCount(), 3);
        PreferenceCharts* charts = preferenceOf(page);
        QCOMPARE(charts != nullptr, dpo);
        const QStringList messages = page.findChild<tb::ui::RunView*>()->messageTexts();
        QCOMPARE(messages.filter(QStringLiteral("dpo")).size(), problem.isEmpty() ? 0 : 1);
        if (!problem.isEmpty())
            QVERIFY2(messages.filter(problem).size() == 1, qPrintable(messages.join('\n')));
        if (!charts)
            return;
        for (QCPGraph* graph : {charts->rewardsChosen(), charts->rewardsRejected(),
                 charts->margin(), charts->accuracy()})
            QCOMPARE(graph->dataCount(), 3);
        QCOMPARE(std::isnan(charts->margin()->data()->at(1)->value), marginGap);
        QCOMPARE(charts->accuracy()->data()->at(2)->value, 75.0);
        QCOMPARE(charts->rewardsRejected()->data()->at(2)->value, -0.03);
        QVERIFY2(charts->title().startsWith(
                     QStringLiteral("DPO at step 3: reward margin 0.030, accuracy 75 %")),
            qPrintable(charts->title()));
        QVERIFY2(charts->describeStepNear(2.2).contains(
                     marginGap ? "reward margin n/a" : "reward margin 0.020"),
            qPrintable(charts->describeStepNear(2.2)));

        // Another run in the same page: a supervised one shows no DPO charts.
        const QString supervised = folder + QStringLiteral("-sft");
        QVERIFY(QDir().mkpath(supervised));
        appendLine(supervised + QStringLiteral("/events.jsonl"), runStart());
        appendLine(supervised + QStringLiteral("/events.jsonl"), step(1, QString()));
        page.followRunFolder(supervised);
        QTRY_COMPARE(page.charts()->lossPointCount(), 1);
        QVERIFY(!preferenceOf(page));
    }

    // 5,000 DPO steps whose figures swing from step to step, opened whole:
    // every point drawn, and what a replot of the DPO charts costs against
    // the run's curves beside them (printed; machines differ too much to
    // hold it to a figure).
    void opensALongRun()
    {
        const QString folder = m_dir.filePath(QStringLiteral("long"));
        QVERIFY(QDir().mkpath(folder));
        QFile file(folder + QStringLiteral("/events.jsonl"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QByteArray::fromStdString(runStart() + "\n"));
        constexpr int kSteps = 5000;
        for (int number = 1; number <= kSteps; ++number)
            file.write(QByteArray::fromStdString(
                step(number, figures(number, QString::number(0.5 + (number % 7) * 0.1))) + "\n"));
        file.close();

        RunsPage page;
        page.resize(1400, 900);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        QElapsedTimer opening;
        opening.start();
        page.followRunFolder(folder);
        QTRY_VERIFY_WITH_TIMEOUT(
            preferenceOf(page) && preferenceOf(page)->margin()->dataCount() == kSteps, 60000);
        const qint64 openMs = opening.elapsed();
        PreferenceCharts* charts = preferenceOf(page);
        QCOMPARE(charts->rewardsChosen()->dataCount(), kSteps);
        QCOMPARE(charts->margin()->data()->at(kSteps - 1)->value, 0.5 + (kSteps % 7) * 0.1);
        const auto medianReplotMs = [](QCustomPlot* plot) {
            QVector<double> times;
            for (int i = 0; i < 9; ++i) {
                QElapsedTimer timer;
                timer.start();
                plot->replot(QCustomPlot::rpImmediateRefresh);
                times.append(double(timer.nsecsElapsed()) / 1e6);
            }
            std::sort(times.begin(), times.end());
            return times[4];
        };
        qInfo("opened in %lld ms; replot: DPO charts %.1f ms, the run's curves %.1f ms", openMs,
            medianReplotMs(charts), medianReplotMs(page.charts()));
    }

    // The Compare page's DPO tab: offered while a picked run is a DPO run,
    // each DPO run's margin and accuracy as its events hold them, in the
    // colour the Overlay tab gives the run; a supervised run left out.
    void compareOverlaysDpoRuns()
    {
        const QString root = m_dir.filePath(QStringLiteral("compare"));
        const QStringList names{
            QStringLiteral("beta-0.1"), QStringLiteral("sft"), QStringLiteral("beta-0.5")};
        for (int r = 0; r < names.size(); ++r) {
            const QString events =
                root + QLatin1Char('/') + names[r] + QStringLiteral("/events.jsonl");
            QVERIFY(QDir().mkpath(QFileInfo(events).path()));
            appendLine(events, runStart(names[r].toStdString(), r == 1 ? "sft" : "dpo"));
            for (int number = 1; number <= 20; ++number) {
                const double margin = (r + 1) * 0.2 * number * (1.0 + 0.15 * (number % 3));
                appendLine(events,
                    step(number, r == 1 ? QString() : figures(number, QString::number(margin))));
            }
        }
        tb::ui::ComparePage page;
        page.resize(1400, 900);
        page.show();
        page.setRunsFolder(root);
        QTRY_COMPARE(page.runsModel()->rowCount(), 3);
        page.setPicked(root + QStringLiteral("/sft"), true);
        QTRY_COMPARE(page.overlay()->runCount(), 1);
        QVERIFY(!page.preferenceTabShown());
        for (const QString& name : {names[0], names[2]})
            page.setPicked(root + QLatin1Char('/') + name, true);
        tb::ui::PreferenceOverlay* overlay = page.preferenceOverlay();
        QTRY_COMPARE(overlay->runCount(), 2);
        QVERIFY(page.preferenceTabShown());
        QTRY_COMPARE(
            page.overlay()->runCount(), 3); // built on the pool: its colours to compare with
        QList<int> dpoRuns; // the DPO runs' places among the compared runs
        for (int c = 0; c < page.comparedRuns().size(); ++c)
            if (page.comparedRuns()[c].preference)
                dpoRuns << c;
        QCOMPARE(dpoRuns.size(), overlay->runCount());
        for (int r = 0; r < overlay->runCount(); ++r) {
            const int compared = dpoRuns[r];
            const std::vector<json> steps = eventsOf(page.comparedRuns()[compared].dir, "step");
            compareToEvents(overlay->margin(r), steps, "rewards_margin", 1.0);
            compareToEvents(overlay->accuracy(r), steps, "rewards_accuracy", 100.0);
            QCOMPARE(overlay->margin(r)->pen().color(),
                page.overlay()->curve(compared, tb::ui::OverlayCharts::LossPanel)->pen().color());
        }
        // A run that grows is filled again; the other keeps its graphs.
        QCPGraph* other = overlay->margin(1);
        appendLine(root + QLatin1Char('/') + names[0] + QStringLiteral("/events.jsonl"),
            step(21, figures(21, QStringLiteral("5.5"))));
        QTRY_COMPARE(overlay->margin(0)->dataCount(), 21);
        QCOMPARE(overlay->margin(0)->data()->at(20)->value, 5.5);
        QCOMPARE(overlay->margin(1), other);
        QCOMPARE(other->dataCount(), 20);
        auto* tabs = page.findChild<QTabWidget*>(QStringLiteral("compareTabs"));
        tabs->setCurrentWidget(overlay);
        QTest::qWait(100); // the queued replot
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/compare_dpo.png")));

        for (const QString& name : {names[0], names[2]})
            page.setPicked(root + QLatin1Char('/') + name, false);
        QTRY_COMPARE(page.overlay()->runCount(), 1);
        QVERIFY(!page.preferenceTabShown());
    }

    // presets/recipes/dpo.yaml trained by tunebench-cli (12 steps of 4
    // pairs on the CPU), then opened: every curve holds the events' figures.
    void showsARealDpoRun()
    {
#ifndef TB_CLI_HAS_TRAINER
        TB_SKIP("this build has no trainer (TUNEBENCH_TRAINER off)");
#else
        const QString runDir = m_dir.filePath(QStringLiteral("recipe-dpo"));
        QProcess trainer;
        trainer.setProcessChannelMode(QProcess::MergedChannels);
        trainer.start(tb::test::qBuildPath("app/cli/tunebench-cli"),
            {QStringLiteral("train"), tb::test::qSourcePath("presets/recipes/dpo.yaml"),
                QStringLiteral("--output"), runDir, QStringLiteral("--threads"),
                QStringLiteral("1"), QStringLiteral("--quiet")});
        QVERIFY(trainer.waitForFinished(240000));
        QVERIFY2(trainer.exitStatus() == QProcess::NormalExit && trainer.exitCode() == 0,
            trainer.readAll().constData());
        const std::vector<json> steps = eventsOf(runDir, "step");
        QCOMPARE(steps.size(), size_t(12));

        RunsPage page;
        page.resize(1400, 900);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        page.followRunFolder(runDir);
        QTRY_VERIFY_WITH_TIMEOUT(page.history().end().has_value(), 30000);
        PreferenceCharts* charts = preferenceOf(page);
        QVERIFY(charts);
        compareToEvents(charts->rewardsChosen(), steps, "rewards_chosen", 1.0);
        compareToEvents(charts->rewardsRejected(), steps, "rewards_rejected", 1.0);
        compareToEvents(charts->margin(), steps, "rewards_margin", 1.0);
        compareToEvents(charts->accuracy(), steps, "rewards_accuracy", 100.0);
        const json& last = steps.back().at("dpo");
        const QString logps =
            QStringLiteral("log p chosen %1 (reference %2), rejected %3 (reference %4)")
                .arg(last.at("logps_chosen").get<double>(), 0, 'f', 2)
                .arg(last.at("ref_logps_chosen").get<double>(), 0, 'f', 2)
                .arg(last.at("logps_rejected").get<double>(), 0, 'f', 2)
                .arg(last.at("ref_logps_rejected").get<double>(), 0, 'f', 2);
        QVERIFY2(charts->title().contains(logps), qPrintable(charts->title() + " / " + logps));
        QTest::qWait(100); // the queued replot
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/runs_page_dpo.png")));
        qInfo("%s", qPrintable(charts->title()));
#endif
    }

private:
    QTemporaryDir m_dir;
};

QTEST_MAIN(TestPreferenceView)
#include "test_preference_view.moc"
