#include "overlay_fixture.h"

// New runs for the Compare page's overlay (a followed run grown, runs picked
// or unpicked) are made and decimated on the thread pool
// (compare/background_decimator.h): setRuns returns at once, the panels keep
// their image until the answer, which matches the synchronous overlay's;
// a stale answer never overwrites a newer one, and a build is let finish
// while newer runs come, so a run growing faster than its curves are built
// still moves.
using namespace tb::test::overlay;

class TestOverlayBuilds : public QObject {
    Q_OBJECT

private slots:
    void init() { QThreadPool::globalInstance()->waitForDone(); }

    // New data (a followed run grown, runs picked or unpicked) is made and
    // decimated on the pool: setRuns returns at once, the panels keep what
    // they showed, and the new curves, the same as the UI thread's, come
    // with the answer.
    void newRunsShownWhenDecimated_data()
    {
        QTest::addColumn<QString>("how");
        QTest::addRow("one run a step longer") << "one longer";
        QTest::addRow("every run a step longer") << "every one longer";
        QTest::addRow("a run added") << "added";
        QTest::addRow("a run removed") << "removed";
    }
    void newRunsShownWhenDecimated()
    {
        QFETCH(QString, how);
        constexpr int kSteps = 20000;
        const QVector<ComparedRun> before = runs(3, kSteps),
                                   after = changedRuns(before, kSteps, how);
        OverlayCharts charts, reference;
        showWith(charts, before, true);
        showWith(reference, after, false);
        const QList<double> shown = lastKeys(charts);
        int renders[OverlayCharts::PanelCount];
        for (int p = 0; p < OverlayCharts::PanelCount; ++p)
            renders[p] = rendersOf(charts, p);
        const int decimations = charts.decimationCount();
        QSignalSpy decimated(&charts, &OverlayCharts::curvesDecimated);

        PoolHold hold;
        charts.setRuns(after);
        QVERIFY(charts.isDecimating());
        charts.replot(QCustomPlot::rpImmediateRefresh);
        // Until the answer: the runs and points shown before, no curve drawn.
        QCOMPARE(charts.runCount(), int(before.size()));
        QCOMPARE(lastKeys(charts), shown);
        QCOMPARE(charts.decimationCount(), decimations);
        for (int p = 0; p < OverlayCharts::PanelCount; ++p)
            QCOMPARE(rendersOf(charts, p), renders[p]);

        hold.release();
        QTRY_COMPARE(decimated.count(), 1);
        settle(charts);
        QCOMPARE(lastKeys(charts), lastKeys(reference));
        QCOMPARE(charts.curve(0, OverlayCharts::LossPanel)->keyAxis()->range(),
            reference.curve(0, OverlayCharts::LossPanel)->keyAxis()->range());
        const QString different = differentPoints(charts, reference);
        QVERIFY2(different.isEmpty(), qPrintable(different));
        QCOMPARE(largestDifference(charts.grab().toImage(), reference.grab().toImage(), charts), 0);
    }

    // Whatever order the answers come in, the newest runs are drawn last
    // and no answer older than one shown is applied: builds are answered in
    // the order asked for, a pan's answer over the runs replaced is dropped,
    // and a pan made before or while the same runs grow keeps its range,
    // its curves the new runs'.
    void staleAnswerNeverOverwritesNewer_data()
    {
        QTest::addColumn<QString>("sequence");
        QTest::addColumn<bool>("rangeKept"); // the x range after the last step stays
        QTest::addRow("setRuns, setRuns") << "runs runs" << false;
        QTest::addRow("pan, setRuns") << "pan runs" << true;
        QTest::addRow("setRuns, pan") << "runs pan" << true;
        QTest::addRow("setRuns, pan, setRuns") << "runs pan runs" << true;
        // The build's runs made on the spot, its answer dropped.
        QTest::addRow("setRuns, background off") << "runs off" << true;
    }
    void staleAnswerNeverOverwritesNewer()
    {
        QFETCH(QString, sequence);
        QFETCH(bool, rangeKept);
        constexpr int kSteps = 30000;
        QVector<ComparedRun> data = runs(3, kSteps);
        OverlayCharts charts, reference;
        showWith(charts, data, true);
        showWith(reference, data, false);
        QCPAxis* keys = charts.curve(0, OverlayCharts::LossPanel)->keyAxis();
        QList<double> shown; // the runs' length at each answer applied
        connect(&charts, &OverlayCharts::curvesDecimated, this,
            [&] { shown.append(shownSteps(charts)); });
        {
            // Every job asked for waits, so each step supersedes the one before.
            PoolHold hold;
            int steps = kSteps;
            for (const QString& step : sequence.split(u' ')) {
                if (step == QLatin1String("pan")) {
                    change(charts, QStringLiteral("pan"));
                    charts.replot(QCustomPlot::rpImmediateRefresh);
                } else if (step == QLatin1String("off")) {
                    charts.setBackgroundDecimation(false);
                } else {
                    data = changedRuns(data, steps++, QStringLiteral("every one longer"));
                    charts.setRuns(data);
                }
            }
            QVERIFY(charts.isDecimating());
            const QCPRange asked = keys->range();
            hold.release();
            QTRY_VERIFY(!charts.isDecimating());
            QCOMPARE(keys->range() == asked, rangeKept);
        }
        settle(charts);
        drainPool();
        QVERIFY(std::is_sorted(shown.begin(), shown.end()));
        // The reference given the newest runs at once, then the range shown.
        reference.setRuns(data);
        reference.curve(0, OverlayCharts::LossPanel)->keyAxis()->setRange(keys->range());
        reference.replot(QCustomPlot::rpImmediateRefresh);
        QCOMPARE(lastKeys(charts), lastKeys(reference));
        const QString different = differentPoints(charts, reference);
        QVERIFY2(different.isEmpty(), qPrintable(different));
        QCOMPARE(largestDifference(charts.grab().toImage(), reference.grab().toImage(), charts), 0);
    }

    // A followed run calls setRuns about once a second, and a build can
    // take longer than that. Each build is let finish and shown while newer
    // runs come, and only the newest of those is built next: the curves
    // move on a build at a time, never back, and end as the UI thread makes
    // them. Each build's view gets its curves while the next build runs.
    void buildsShowWhileRunsGrowFasterThanThey_data()
    {
        QTest::addColumn<bool>("evalAfter");
        QTest::addColumn<int>("axis");
        QTest::addRow("steps") << false << int(tb::metrics::XAxis::Step);
        QTest::addRow("wall time, validation after the last step")
            << true << int(tb::metrics::XAxis::WallSeconds);
    }
    void buildsShowWhileRunsGrowFasterThanThey()
    {
        QFETCH(bool, evalAfter);
        QFETCH(int, axis);
        constexpr int kSteps = 5000;
        constexpr int kRounds = 4, kCallsPerBuild = 3;
        OverlayCharts charts, reference;
        charts.setXAxis(tb::metrics::XAxis(axis));
        reference.setXAxis(tb::metrics::XAxis(axis));
        showWith(charts, followedRuns(kSteps, evalAfter), true);
        auto gate = std::make_shared<BuildGate>();
        const auto release = qScopeGuard([gate] { gate->openAll(); });
        charts.setBuildHook([gate] {
            if (gate->open)
                return;
            gate->started.release();
            gate->go.acquire();
        });
        QList<double> shown;
        connect(&charts, &OverlayCharts::curvesDecimated, this,
            [&] { shown.append(shownSteps(charts)); });
        const int coalesced = charts.decimator().coalescedBuilds();

        int steps = kSteps + 1, building = steps; // the runs' length, and that of the build running
        charts.setRuns(followedRuns(steps, evalAfter));
        for (int round = 0; round < kRounds; ++round) {
            QVERIFY(gate->started.tryAcquire(1, 10000)); // the build of `building` runs
            for (int call = 0; call < kCallsPerBuild; ++call)
                charts.setRuns(followedRuns(++steps, evalAfter));
            gate->go.release();
            QTRY_COMPARE(
                shownSteps(charts), lastKey(followedRuns(building, false), charts.xAxis()));
            QTRY_VERIFY(holdsView(charts));
            building = steps;
        }
        gate->openAll();
        QTRY_VERIFY(!charts.isDecimating());
        settle(charts);
        // Every answer newer than the one before; of the runs asked for
        // while a build ran, only the newest was built.
        QVERIFY2(std::is_sorted(shown.begin(), shown.end()), qPrintable(QDebug::toString(shown)));
        QCOMPARE(charts.decimator().coalescedBuilds() - coalesced, kRounds * (kCallsPerBuild - 1));
        showWith(reference, followedRuns(steps, evalAfter), false);
        QCOMPARE(shownSteps(charts), lastKey(followedRuns(steps, false), charts.xAxis()));
        // The validation point past the steps widened the range fitted.
        QCOMPARE(charts.curve(0, OverlayCharts::LossPanel)->keyAxis()->range().upper
                > shownSteps(charts),
            evalAfter);
        QCOMPARE(charts.curve(0, OverlayCharts::LossPanel)->keyAxis()->range(),
            reference.curve(0, OverlayCharts::LossPanel)->keyAxis()->range());
        const QString different = differentPoints(charts, reference);
        QVERIFY2(different.isEmpty(), qPrintable(different));
        QCOMPARE(largestDifference(charts.grab().toImage(), reference.grab().toImage(), charts), 0);
    }
};

QTEST_MAIN(TestOverlayBuilds)
#include "test_overlay_builds.moc"
