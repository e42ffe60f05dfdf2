#include "overlay_fixture.h"

#include <map>
#include <utility>

// A pan or a zoom of the Compare page's overlay decimates on the thread
// pool (compare/background_decimator.h): the replot that follows the move
// shows each panel's previous image moved and scaled to the new range at
// once, and the exact curves, the same as deciding them on the UI thread,
// follow when the job reports. Only the latest range's curves are drawn, and
// a page closed or runs removed while a job runs leave nothing behind.
// test_overlay_builds covers new runs built there.
using namespace tb::test::overlay;

// The rows of a test draw the same runs, up to two million step events a
// set: each set is built once (most of the AddressSanitizer stage's time
// went into building them again). Histories are immutable, so rows share them.
static const QVector<ComparedRun>& sharedRuns(int count, int steps)
{
    static std::map<std::pair<int, int>, QVector<ComparedRun>> built;
    auto [set, isNew] = built.try_emplace({count, steps});
    if (isNew)
        set->second = runs(count, steps);
    return set->second;
}

class TestOverlayBackground : public QObject {
    Q_OBJECT

private slots:
    void init() { QThreadPool::globalInstance()->waitForDone(); }

    // The decimator alone: only the latest request is answered, with what
    // decimating on this thread gives.
    void decimatorAnswersOnlyTheLatest_data()
    {
        QTest::addColumn<QString>("sequence");
        QTest::addColumn<int>("answers");
        QTest::addRow("one request") << "A" << 1;
        QTest::addRow("superseded") << "AB" << 1;
        QTest::addRow("asked twice the same") << "AA" << 1;
        QTest::addRow("cancelled") << "A-" << 0;
        QTest::addRow("cancelled, then asked again") << "A-B" << 1;
    }
    void decimatorAnswersOnlyTheLatest()
    {
        QFETCH(QString, sequence);
        QFETCH(int, answers);
        auto curves = std::make_shared<std::vector<tb::ui::CurveSeries>>();
        for (int c = 0; c < 40; ++c) {
            tb::ui::CurveSeries series;
            for (int i = 0; i < 200000; ++i) {
                series.keys.push_back(i);
                series.values.push_back(std::sin(i * 0.37 + c));
            }
            curves->push_back(std::move(series));
        }
        const tb::ui::DecimationRequest a{curves, QCPRange(0, 200000), 500},
            b{curves, QCPRange(1000, 9000), 700};
        tb::ui::BackgroundDecimator decimator;
        QList<tb::ui::DecimationRequest> answered;
        std::vector<tb::ui::DecimatedCurve> last;
        connect(&decimator, &tb::ui::BackgroundDecimator::decimated, this,
            [&](const tb::ui::DecimationRequest& request,
                const std::vector<tb::ui::DecimatedCurve>& got) {
                answered.append(request);
                last = got;
            });
        for (QChar step : sequence) {
            if (step == u'-')
                decimator.cancel();
            else
                decimator.request(step == u'A' ? a : b);
        }
        QTRY_VERIFY(!decimator.isBusy());
        QVERIFY(QThreadPool::globalInstance()->waitForDone(5000));
        QTest::qWait(50); // a stale answer would be delivered by now
        QCOMPARE(answered.size(), answers);
        if (answers == 0)
            return;
        const tb::ui::DecimationRequest& latest = sequence.endsWith(u'B') ? b : a;
        QVERIFY(answered.constFirst() == latest);
        const auto expected = tb::ui::decimatedCurves(
            *curves, latest.range.lower, latest.range.upper, latest.columns);
        QCOMPARE(last.size(), expected->size());
        for (std::size_t c = 0; c < last.size(); ++c)
            QVERIFY(std::equal(last[c].points.begin(), last[c].points.end(),
                (*expected)[c].points.begin(), (*expected)[c].points.end(),
                [](const QCPGraphData& x, const QCPGraphData& y) {
                    return x.key == y.key && x.value == y.value;
                }));
    }

    void moveShowsOldImageThenExactCurves_data()
    {
        QTest::addColumn<QString>("how");
        QTest::addRow("pan") << "pan";
        QTest::addRow("zoom in") << "zoom in";
        QTest::addRow("zoom out") << "zoom out";
        QTest::addRow("wider window") << "wider";
    }
    void moveShowsOldImageThenExactCurves()
    {
        QFETCH(QString, how);
        // Enough points that the job outlasts the frame that starts it.
        const QVector<ComparedRun> data = sharedRuns(6, 60000);
        OverlayCharts charts, reference;
        showWith(charts, data, true);
        showWith(reference, data, false);
        const QImage before = charts.grab().toImage();
        int renders[OverlayCharts::PanelCount], stretches[OverlayCharts::PanelCount];
        for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
            renders[p] = rendersOf(charts, p);
            stretches[p] = charts.canvas(OverlayCharts::Panel(p))->stretchCount();
        }
        const int decimations = charts.decimationCount();
        PoolHold hold;
        change(charts, how);
        change(reference, how);
        QCOMPARE(charts.curve(0, OverlayCharts::LossPanel)->keyAxis()->range(),
            reference.curve(0, OverlayCharts::LossPanel)->keyAxis()->range());

        // The frame after the move: the old image, moved, and a job running.
        charts.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(charts.isDecimating());
        QCOMPARE(charts.decimationCount(), decimations);
        for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
            QCOMPARE(rendersOf(charts, p), renders[p]);
            QVERIFY(charts.canvas(OverlayCharts::Panel(p))->stretchCount() > stretches[p]);
        }
        const QImage moved = charts.grab().toImage();
        if (how == QLatin1String("pan")) {
            const int mismatches = movedMismatches(before, moved, charts, 40);
            QVERIFY2(mismatches == 0, qPrintable(QString::number(mismatches)));
        }
        QVERIFY(largestDifference(moved, before, charts) > 100); // not the frame before the move

        // Then the exact curves, as the UI thread decimating gives them.
        hold.release();
        QTRY_VERIFY(!charts.isDecimating());
        QTRY_VERIFY(
            rendersOf(charts, OverlayCharts::MemoryPanel) > renders[OverlayCharts::MemoryPanel]);
        QCOMPARE(charts.decimationCount(), decimations + 1);
        reference.replot(QCustomPlot::rpImmediateRefresh);
        const QString different = differentPoints(charts, reference);
        QVERIFY2(different.isEmpty(), qPrintable(different));
        QCOMPARE(largestDifference(charts.grab().toImage(), reference.grab().toImage(), charts), 0);
    }

    void rapidMovesDrawOnlyTheLatest_data()
    {
        QTest::addColumn<int>("moves");
        QTest::addRow("2 pans") << 2;
        QTest::addRow("6 pans") << 6;
        QTest::addRow("20 pans") << 20;
    }
    void rapidMovesDrawOnlyTheLatest()
    {
        QFETCH(int, moves);
        const QVector<ComparedRun> data = sharedRuns(4, 50000);
        OverlayCharts charts, reference;
        showWith(charts, data, true);
        showWith(reference, data, false);
        QSignalSpy decimated(&charts, &OverlayCharts::curvesDecimated);
        const int renders = rendersOf(charts, OverlayCharts::LossPanel);
        const int stopped = charts.decimator().stoppedJobs();
        // Each move's frame asks for its curves while the pool is held, so
        // no job can finish before the last move.
        PoolHold hold;
        for (int i = 0; i < moves; ++i) {
            change(charts, QStringLiteral("pan"));
            charts.replot(QCustomPlot::rpImmediateRefresh);
            change(reference, QStringLiteral("pan"));
        }
        hold.release();
        QTRY_COMPARE(decimated.count(), 1);
        QTRY_VERIFY(rendersOf(charts, OverlayCharts::LossPanel) > renders);
        QTest::qWait(300); // a stale job's answer would come by now
        QCOMPARE(decimated.count(), 1);
        QCOMPARE(rendersOf(charts, OverlayCharts::LossPanel), renders + 1);
        // The jobs of the ranges passed over stopped before their first curve.
        QCOMPARE(charts.decimator().stoppedJobs() - stopped, moves - 1);
        reference.replot(QCustomPlot::rpImmediateRefresh);
        const QString different = differentPoints(charts, reference);
        QVERIFY2(different.isEmpty(), qPrintable(different));
    }

    void closingOrRemovingRunsWhileDecimating_data()
    {
        QTest::addColumn<QString>("what");
        QTest::addRow("page closed") << "close";
        QTest::addRow("page closed while new runs are built") << "close building";
        QTest::addRow("runs removed") << "remove";
        QTest::addRow("every run removed") << "clear";
    }
    void closingOrRemovingRunsWhileDecimating()
    {
        QFETCH(QString, what);
        auto page = std::make_unique<QWidget>();
        auto* charts = new OverlayCharts(page.get());
        page->resize(900, 700);
        charts->resize(900, 700);
        page->show();
        QVERIFY(QTest::qWaitForWindowExposed(page.get()));
        charts->setRuns(sharedRuns(20, 100000));
        charts->replot(QCustomPlot::rpImmediateRefresh);
        settle(*charts);
        const std::weak_ptr<const std::vector<tb::ui::CurveSeries>> curves = charts->curveSeries();
        QSignalSpy decimated(charts, &OverlayCharts::curvesDecimated);
        change(*charts, QStringLiteral("zoom in"));
        charts->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(charts->isDecimating());
        QVERIFY(curves.use_count() >= 2); // the job holds them too
        if (what.startsWith(QLatin1String("close"))) {
            if (what == QLatin1String("close building")) {
                charts->setRuns(runs(20, 100001));
                QVERIFY(charts->decimator().isBuilding());
            }
            page.reset();
        } else {
            const int decimations = charts->decimationCount();
            const int left = what == QLatin1String("clear") ? 0 : 3;
            charts->setRuns(runs(left, 1000));
            QTRY_COMPARE(charts->runCount(), left);
            drainPool();
            // The new runs' curves only: the stale job's were never applied.
            QCOMPARE(decimated.count(), 1);
            QCOMPARE(charts->decimationCount(), decimations + 1);
        }
        // Whatever the job held was let go with it.
        QVERIFY(QThreadPool::globalInstance()->waitForDone(5000));
        QVERIFY(curves.expired());
        if (page) {
            // And the overlay goes on: a pan after it shows its own curves.
            const int answers = int(decimated.count());
            change(*charts, QStringLiteral("pan"));
            charts->replot(QCustomPlot::rpImmediateRefresh);
            QTRY_COMPARE(decimated.count(), answers + 1);
        }
    }
};

QTEST_MAIN(TestOverlayBackground)
#include "test_overlay_background.moc"
