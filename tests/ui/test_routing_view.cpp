// The Runs page's routing charts under Xvfb: they appear for a run whose
// steps carry expert_tokens and not for a dense one, follow the event file
// as it grows, redraw after a resume, take a long run, and show a real
// Mixtral run of the trainer (a screenshot of it).
#include "../support/event_lines.h"
#include "../support/model_variants.h"
#include "../support/qt_test_paths.h"
#include "../support/skip.h"
#include "metrics/event.h"
#include "metrics/step_record.h"
#include "runs/routing_charts.h"
#include "runs/run_charts.h"
#include "runs/runs_page.h"

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using nlohmann::json;
using tb::metrics::EventType;
using tb::metrics::makeEvent;
using tb::test::appendLine;
using tb::ui::RoutingCharts;
using tb::ui::RunsPage;

namespace {

std::string runStart(int resumedFrom = -1)
{
    json fields = {{"run_id", "moe"}, {"world_size", 1}, {"config", json::object()},
        {"model", {{"name", "mixtral-tiny"}, {"params_total", 900000}}}, {"total_steps", 100}};
    if (resumedFrom >= 0)
        fields["resumed_from_step"] = resumedFrom;
    return makeEvent(EventType::RunStart, 0, 1.0e9, fields).dump();
}

// A step as the trainer writes it, with the routing fields when given.
std::string moeStep(int step, const json& expertTokens, double auxLoss = -1)
{
    tb::metrics::StepRecord record;
    record.step = step;
    record.loss = 2.0 + 1.0 / step;
    record.tokensPerSecond = 1000;
    json fields = record.toFields();
    if (!expertTokens.is_null())
        fields["expert_tokens"] = expertTokens;
    if (auxLoss >= 0)
        fields["router_aux_loss"] = auxLoss;
    return makeEvent(EventType::Step, 0, 1.0e9 + step, fields).dump();
}

// `layers` layers of `experts`: even, or every token on experts 0 and 1.
json loads(int layers, int experts, bool collapsed)
{
    json all = json::array();
    for (int layer = 0; layer < layers; ++layer) {
        json row = json::array();
        for (int expert = 0; expert < experts; ++expert)
            row.push_back(collapsed ? (expert < 2 ? 64 : 0) : 128 / experts);
        all.push_back(row);
    }
    return all;
}

RoutingCharts* routingOf(const RunsPage& page)
{
    return page.findChild<RoutingCharts*>();
}

} // namespace

class TestRoutingView : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QDir().mkpath(tb::test::qBuildPath("screenshots"));
    }

    void appearsOnlyForAMixtureOfExperts_data()
    {
        QTest::addColumn<bool>("routed");
        QTest::addColumn<bool>("auxLoss");
        QTest::addRow("dense") << false << false;
        QTest::addRow("experts") << true << false;
        QTest::addRow("experts with the router's loss") << true << true;
    }

    void appearsOnlyForAMixtureOfExperts()
    {
        QFETCH(bool, routed);
        QFETCH(bool, auxLoss);
        const QString folder = m_dir.filePath(QString::fromUtf8(QTest::currentDataTag()));
        QVERIFY(QDir().mkpath(folder));
        const QString events = folder + QStringLiteral("/events.jsonl");
        appendLine(events, runStart());
        for (int step = 1; step <= 3; ++step)
            appendLine(
                events, moeStep(step, routed ? loads(2, 4, false) : json(), auxLoss ? 2.0 : -1));

        RunsPage page;
        page.resize(1400, 900);
        page.show();
        page.followRunFolder(folder);
        QTRY_COMPARE(page.charts()->lossPointCount(), 3);
        RoutingCharts* routing = routingOf(page);
        QCOMPARE(routing != nullptr, routed);
        if (!routed)
            return;
        QVERIFY(routing->isVisible());
        QCOMPARE(routing->balancePointCount(), 3);
        QCOMPARE(routing->hasAuxLossPanel(), auxLoss);
        QCOMPARE(routing->auxLossPointCount(), auxLoss ? 3 : 0);
        QCOMPARE(routing->heatMap()->data()->keySize(), 4);
        QCOMPARE(routing->heatMap()->data()->valueSize(), 2);
        QCOMPARE(routing->heatMap()->data()->cell(3, 1), 1.0); // the even share
        QVERIFY2(routing->title().contains(QStringLiteral("step 3\nbusiest 1.00x")),
            qPrintable(routing->title()));

        // Another folder, of a dense run: the routing charts go.
        const QString dense =
            m_dir.filePath(QStringLiteral("dense-after-") + QTest::currentDataTag());
        QVERIFY(QDir().mkpath(dense));
        appendLine(dense + "/events.jsonl", runStart());
        appendLine(dense + "/events.jsonl", moeStep(1, json()));
        page.followRunFolder(dense);
        QTRY_COMPARE(page.charts()->lossPointCount(), 1);
        QVERIFY(!routingOf(page));
    }

    // Steps arrive while the page follows; the heat map shows the latest,
    // and a resume from an earlier checkpoint redraws the repeated steps.
    void followsTheRunLive()
    {
        const QString folder = m_dir.filePath(QStringLiteral("live"));
        QVERIFY(QDir().mkpath(folder));
        const QString events = folder + QStringLiteral("/events.jsonl");
        appendLine(events, runStart());
        appendLine(events, moeStep(1, loads(3, 8, false)));
        appendLine(events, moeStep(2, loads(3, 8, false)));

        RunsPage page;
        page.resize(1400, 900);
        page.show();
        page.followRunFolder(folder);
        QTRY_VERIFY(routingOf(page) && routingOf(page)->balancePointCount() == 2);
        RoutingCharts* routing = routingOf(page);
        appendLine(events, moeStep(3, loads(3, 8, false)));
        appendLine(events, moeStep(4, loads(3, 8, true)));
        QTRY_COMPARE(routing->balancePointCount(), 4);
        QCOMPARE(routing->heatMapStep(), 4);
        // Experts 0 and 1 took everything: 4x the even share, the others none.
        QCOMPARE(routing->heatMap()->data()->cell(0, 2), 4.0);
        QCOMPARE(routing->heatMap()->data()->cell(5, 2), RoutingCharts::kShareLow);
        QVERIFY2(routing->title().contains(QStringLiteral("busiest 4.00x")),
            qPrintable(routing->title()));

        appendLine(events, runStart(2));
        appendLine(events, moeStep(3, loads(3, 8, false)));
        QTRY_COMPARE(routing->heatMapStep(), 3);
        QCOMPARE(routing->balancePointCount(), 3);
        QCOMPARE(routing->heatMap()->data()->cell(0, 2), 1.0);

        // A malformed field is listed, and the step after it is drawn.
        appendLine(events, moeStep(4, json::parse("[[8,8],[8]]")));
        appendLine(events, moeStep(5, loads(3, 8, false)));
        QTRY_COMPARE(routing->heatMapStep(), 5);
        QCOMPARE(routing->balancePointCount(), 4);
        const QString messages = page.messageTexts().join('\n');
        QVERIFY2(messages.contains(QStringLiteral(
                     "step 4: field 'expert_tokens[1]': got 1 experts, expected 2 as in layer 0")),
            qPrintable(messages));
    }

    // 5,000 steps of 32 layers x 8 experts (Mixtral-8x7B's shape), opened at
    // once: every point drawn, batch by batch. The dense row, the same steps
    // without routing, is what the rest of the page costs.
    void opensALongRun_data()
    {
        QTest::addColumn<bool>("routed");
        QTest::addRow("dense") << false;
        QTest::addRow("experts") << true;
    }

    void opensALongRun()
    {
        QFETCH(bool, routed);
        const QString folder = m_dir.filePath(QStringLiteral("long-") + QTest::currentDataTag());
        QVERIFY(QDir().mkpath(folder));
        QFile file(folder + QStringLiteral("/events.jsonl"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QByteArray::fromStdString(runStart() + "\n"));
        constexpr int kSteps = 5000;
        for (int step = 1; step <= kSteps; ++step)
            file.write(QByteArray::fromStdString(
                moeStep(step, routed ? loads(32, 8, step % 7 == 0) : json(), routed ? 2.0 : -1)
                + "\n"));
        file.close();

        RunsPage page;
        page.resize(1400, 900);
        page.show();
        QElapsedTimer clock;
        clock.start();
        page.followRunFolder(folder);
        QTRY_VERIFY_WITH_TIMEOUT(page.charts()->lossPointCount() == kSteps
                && (!routed || (routingOf(page) && routingOf(page)->auxLossPointCount() == kSteps)),
            60000);
        if (routed)
            QCOMPARE(routingOf(page)->balancePointCount(), kSteps);
        qInfo("%d steps (%s) opened and drawn in %lld ms", kSteps, QTest::currentDataTag(),
            clock.elapsed());
    }

    // The curves of a value per step take the raster engine's line drawer
    // (a pen at most a pixel wide): a wider pen is stroked as a polygon,
    // which for a curve that swings from step to step costs a long run's
    // opening most of a second a replot.
    void stepCurvesAreDrawnOnePixelWide_data()
    {
        QTest::addColumn<QString>("curve");
        QTest::addRow("worst layer") << QStringLiteral("worst layer");
        QTest::addRow("mean of layers") << QStringLiteral("mean of layers");
        QTest::addRow("router aux loss") << QStringLiteral("router aux loss");
    }

    void stepCurvesAreDrawnOnePixelWide()
    {
        QFETCH(QString, curve);
        RoutingCharts routing;
        tb::metrics::RunHistory history;
        history.apply(*tb::metrics::parseEvent(moeStep(1, loads(2, 4, false), 2.0)));
        routing.showHistory(history);
        QCPGraph* graph = nullptr;
        for (int i = 0; i < routing.graphCount(); ++i)
            if (routing.graph(i)->name() == curve)
                graph = routing.graph(i);
        QVERIFY2(graph, qPrintable(curve));
        QCOMPARE(graph->dataCount(), 1);
        QVERIFY2(graph->pen().widthF() <= 1.0, qPrintable(QString::number(graph->pen().widthF())));
    }

    // A full fine-tune of stories260K made a Mixtral (4 experts, 2 a token,
    // the router's loss on), trained by tunebench-cli and followed live.
    void showsARealMixtralRun()
    {
#ifndef TB_CLI_HAS_TRAINER
        TB_SKIP("this build has no trainer (TUNEBENCH_TRAINER off)");
#else
        const std::string model = tb::test::writeMixtralCopy(tb::test::demoModelDir(),
            m_dir.filePath(QStringLiteral("mixtral")).toStdString(), true);
        const QString runDir = m_dir.filePath(QStringLiteral("mixtral-run"));
        const QString config = m_dir.filePath(QStringLiteral("mixtral.yaml"));
        QFile file(config);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(
            QStringLiteral("model: %1\nmethod: full\n"
                           "data: {train: %2,"
                           " format: alpaca, sequence_length: 128, validation_split: 0.1}\n"
                           "training: {max_steps: 40, micro_batch: 4, learning_rate: 3.0e-3}\n"
                           "output: {dir: %3}\n")
                .arg(QString::fromStdString(model),
                    tb::test::qSourcePath("resources/demo/tiny_instructions.jsonl"), runDir)
                .toUtf8());
        file.close();
        QProcess trainer;
        trainer.setProcessChannelMode(QProcess::MergedChannels);
        trainer.start(tb::test::qBuildPath("app/cli/tunebench-cli"),
            {QStringLiteral("train"), config, QStringLiteral("--threads"), QStringLiteral("1"),
                QStringLiteral("--quiet")});
        QVERIFY(trainer.waitForStarted());

        RunsPage page;
        page.resize(1400, 900);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        page.followRunFolder(runDir);
        QTRY_VERIFY_WITH_TIMEOUT(page.history().end().has_value(), 240000);
        // It may have exited before the page read its run_end.
        QVERIFY(trainer.state() == QProcess::NotRunning || trainer.waitForFinished(60000));
        QVERIFY2(trainer.exitStatus() == QProcess::NormalExit && trainer.exitCode() == 0,
            trainer.readAll().constData());
        QCOMPARE(page.history().end()->status, std::string("completed"));
        RoutingCharts* routing = routingOf(page);
        QVERIFY(routing);
        QTRY_COMPARE(routing->balancePointCount(), 40);
        QCOMPARE(routing->auxLossPointCount(), 40);
        QCOMPARE(routing->heatMap()->data()->keySize(), 4);
        QCOMPARE(routing->heatMap()->data()->valueSize(), 5);
        QCOMPARE(routing->heatMapStep(), 40);
        QTest::qWait(100); // the queued replot
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/runs_page_moe.png")));
        qInfo("%s", qPrintable(routing->title()));
#endif
    }

private:
    QTemporaryDir m_dir;
};

QTEST_MAIN(TestRoutingView)
#include "test_routing_view.moc"
