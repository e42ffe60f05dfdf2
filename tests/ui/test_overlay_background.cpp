#include "compare/overlay_charts.h"
#include "metrics/event.h"
#include "metrics/run_compare.h"
#include "overlay_runs.h"

#include <QSemaphore>
#include <QThreadPool>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>

// A pan or a zoom of the Compare page's overlay decimates on the thread
// pool (compare/background_decimator.h): the replot that follows the move
// shows each panel's previous image moved and scaled to the new range at
// once, and the exact curves, the same as deciding them on the UI thread,
// follow when the job reports. Only the latest range's curves are drawn, and
// a page closed or runs removed while a job runs leave nothing behind. New
// runs are built there too; a build is let finish while newer runs come,
// so a run growing faster than its curves are built still moves.
using tb::ui::ComparedRun;
using tb::ui::OverlayCharts;

namespace {

QVector<ComparedRun> runs(int count, int steps)
{
    QVector<ComparedRun> out;
    for (int i = 0; i < count; ++i)
        out.append({QStringLiteral("run-%1").arg(i), tb::test::zigzagRun(i, steps), {}, {}});
    return out;
}

QRect panelRect(const OverlayCharts& charts, int panel)
{
    return charts.curve(0, OverlayCharts::Panel(panel))->keyAxis()->axisRect()->rect();
}

int rendersOf(const OverlayCharts& charts, int panel)
{
    return charts.curveRenderCount(OverlayCharts::Panel(panel));
}

// The change a row makes, to the overlay under test and to its reference.
void change(OverlayCharts& charts, const QString& how)
{
    QCPAxis* keys = charts.axisRects().constFirst()->axis(QCPAxis::atBottom);
    const double pixel = keys->range().size() / keys->axisRect()->width();
    if (how == QLatin1String("pan"))
        keys->moveRange(40 * pixel); // 40 columns: the image moves 40 pixels left
    else if (how == QLatin1String("zoom in"))
        keys->scaleRange(0.5);
    else if (how == QLatin1String("zoom out"))
        keys->scaleRange(1.5);
    else if (how == QLatin1String("wider")) {
        const int width = charts.width() + 150;
        charts.resize(width, charts.height());
        QTRY_COMPARE(charts.width(), width); // the window system answers
    }
}

// A curve's pixel: coloured, not the white, greys and black of the
// background, grid and axes.
bool curvePixel(QRgb c)
{
    return std::max({qRed(c), qGreen(c), qBlue(c)}) - std::min({qRed(c), qGreen(c), qBlue(c)}) > 40;
}

bool backgroundPixel(QRgb c)
{
    return qRed(c) == 255 && qGreen(c) == 255 && qBlue(c) == 255;
}

// Curve pixels inside the panels, `dx` columns apart, that differ, in the
// part of each panel both images show, out of the legend (which stays); the
// grid's grey dots are left out: they stay where the ticks put them.
int movedMismatches(const QImage& before, const QImage& after, const OverlayCharts& charts, int dx)
{
    const QRect legend = charts.findChild<QCPLegend*>(QStringLiteral("runsLegend"))->outerRect();
    int mismatches = 0, curve = 0;
    for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
        const QRect panel = panelRect(charts, p).adjusted(1, 1, -1, -1);
        for (int row = panel.top(); row <= panel.bottom(); ++row)
            for (int column = panel.left(); column + dx <= panel.right(); ++column) {
                if (legend.contains(column, row) || legend.contains(column + dx, row))
                    continue;
                const QRgb was = before.pixel(column + dx, row), is = after.pixel(column, row);
                curve += curvePixel(is);
                mismatches += (curvePixel(was) && curvePixel(is) && was != is)
                    || (curvePixel(was) && backgroundPixel(is)) || (backgroundPixel(was) && curvePixel(is));
            }
    }
    return curve > 1000 ? mismatches : -1; // -1: no curve to compare
}

// Inside the panels, where both images reach (an image of the window before
// it was widened is narrower than the panels now).
int largestDifference(const QImage& a, const QImage& b, const OverlayCharts& charts)
{
    int largest = 0;
    for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
        const QRect panel = panelRect(charts, p) & a.rect() & b.rect();
        for (int row = panel.top(); row <= panel.bottom(); ++row)
            for (int column = panel.left(); column <= panel.right(); ++column) {
                const QRgb x = a.pixel(column, row), y = b.pixel(column, row);
                for (int shift : {0, 8, 16, 24})
                    largest = std::max(largest, std::abs(int((x >> shift) & 0xff) - int((y >> shift) & 0xff)));
            }
    }
    return largest;
}

QString differentPoints(const OverlayCharts& a, const OverlayCharts& b)
{
    for (int run = 0; run < a.runCount(); ++run)
        for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
            const QCPGraphDataContainer &x = *a.curve(run, OverlayCharts::Panel(p))->data(),
                                        &y = *b.curve(run, OverlayCharts::Panel(p))->data();
            const bool same = std::equal(x.constBegin(), x.constEnd(), y.constBegin(), y.constEnd(),
                [](const QCPGraphData& u, const QCPGraphData& v) { return u.key == v.key && u.value == v.value; });
            if (!same)
                return QStringLiteral("run %1, panel %2: %3 points against %4").arg(run).arg(p).arg(x.size()).arg(y.size());
        }
    return {};
}

// Every thread of the pool kept busy until release(), so that a job asked
// for meanwhile is still to run however fast the machine: what the UI shows
// before an answer comes is then seen for sure.
class PoolHold {
public:
    PoolHold()
    {
        for (int i = 0; i < QThreadPool::globalInstance()->maxThreadCount(); ++i)
            QThreadPool::globalInstance()->start([this] {
                m_started.release();
                m_go.acquire();
            });
        m_started.acquire(QThreadPool::globalInstance()->maxThreadCount());
    }
    ~PoolHold() { release(); }
    void release()
    {
        if (!std::exchange(m_released, true))
            m_go.release(QThreadPool::globalInstance()->maxThreadCount());
    }

private:
    QSemaphore m_started, m_go;
    bool m_released = false;
};

// Until the curves of the range and width shown are drawn in every panel
// (the first layout changes the panels' width, which decimates again).
void settle(OverlayCharts& charts)
{
    QTRY_VERIFY(!charts.isDecimating());
    for (int p = 0; p < OverlayCharts::PanelCount; ++p) // a panel a replot
        charts.replot(QCustomPlot::rpImmediateRefresh);
    QTest::qWait(20);
}

// Every job on the pool returned and its answer delivered: what a stale job
// could still do, it has done.
void drainPool()
{
    QVERIFY(QThreadPool::globalInstance()->waitForDone(5000));
    QCoreApplication::processEvents();
}

// The runs a row hands to setRuns after `before` (each run `steps` long):
// one or every run a step longer, a run added or one removed.
QVector<ComparedRun> changedRuns(const QVector<ComparedRun>& before, int steps, const QString& how)
{
    QVector<ComparedRun> after = before;
    if (how == QLatin1String("one longer"))
        after[1].history = tb::test::zigzagRun(1, steps + 1);
    else if (how == QLatin1String("every one longer"))
        after = runs(int(before.size()), steps + 1);
    else if (how == QLatin1String("added"))
        after.append(runs(int(before.size()) + 1, steps).constLast());
    else if (how == QLatin1String("removed"))
        after.removeFirst();
    return after;
}

// Each run's last loss point in the graphs: what a grown run changes.
QList<double> lastKeys(const OverlayCharts& charts)
{
    QList<double> keys;
    for (int run = 0; run < charts.runCount(); ++run) {
        const QCPGraphDataContainer& data = *charts.curve(run, OverlayCharts::LossPanel)->data();
        keys.append(data.isEmpty() ? -1 : (data.constEnd() - 1)->key);
    }
    return keys;
}

// How far the runs of the curves the overlay holds reach (the first run's
// last x): what each answer of a build advances.
double shownSteps(const OverlayCharts& charts)
{
    const auto& curves = *charts.curveSeries();
    return curves.empty() || curves.front().keys.empty() ? -1 : curves.front().keys.back();
}

// The first run's last x on `axis`, as shownSteps() reads it.
double lastKey(const QVector<ComparedRun>& runs, tb::metrics::XAxis axis)
{
    return tb::metrics::stepPositions(*runs.constFirst().history, axis).back();
}

// A build made to wait on the pool until the test lets it go, so that it
// outlasts the setRuns calls made meanwhile however fast the machine.
struct BuildGate {
    QSemaphore started, go;
    std::atomic<bool> open = false;

    // Lets every build go, the waiting ones and those to come.
    void openAll()
    {
        open = true;
        go.release(1000);
    }
};

// Runs of `steps` steps, each with a validation loss logged after its last
// step when `evalAfter`: on the wall-time axis the range fitted then reaches
// past the steps, so the curves of the whole steps are not the view's.
QVector<ComparedRun> followedRuns(int steps, bool evalAfter)
{
    QVector<ComparedRun> out = runs(3, steps);
    if (!evalAfter)
        return out;
    for (qsizetype i = 0; i < out.size(); ++i) {
        auto history = std::make_shared<tb::metrics::RunHistory>(*out[i].history);
        history->apply({tb::metrics::EventType::Eval, "eval", 0, 1.0e9 + steps * 0.5 + 30,
            {{"step", steps}, {"loss", 2.5}}});
        out[i].history = std::move(history);
    }
    return out;
}

// Whether the loss graph of the first run holds the points of the x range
// and width shown, as decimating its whole curve for them gives.
bool holdsView(const OverlayCharts& charts)
{
    const QCPAxis* keys = charts.curve(0, OverlayCharts::LossPanel)->keyAxis();
    const tb::ui::CurveSeries& whole = charts.curveSeries()->front();
    const tb::ui::DecimatedCurve view = tb::ui::decimatedCurve(whole.keys, whole.values, keys->range().lower,
        keys->range().upper, std::max(1, keys->axisRect()->width()));
    const QCPGraphDataContainer& shown = *charts.curve(0, OverlayCharts::LossPanel)->data();
    return std::equal(shown.constBegin(), shown.constEnd(), view.points.begin(), view.points.end(),
        [](const QCPGraphData& u, const QCPGraphData& v) { return u.key == v.key && u.value == v.value; });
}

// An overlay shown and drawn with `runs`.
void showWith(OverlayCharts& charts, const QVector<ComparedRun>& runs, bool background)
{
    charts.setBackgroundDecimation(background);
    charts.resize(900, 700);
    charts.show();
    QVERIFY(QTest::qWaitForWindowExposed(&charts));
    charts.setRuns(runs);
    charts.replot(QCustomPlot::rpImmediateRefresh);
    settle(charts);
}

} // namespace

class TestOverlayBackground : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        QThreadPool::globalInstance()->waitForDone();
    }

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
        const tb::ui::DecimationRequest a{curves, QCPRange(0, 200000), 500}, b{curves, QCPRange(1000, 9000), 700};
        tb::ui::BackgroundDecimator decimator;
        QList<tb::ui::DecimationRequest> answered;
        std::vector<tb::ui::DecimatedCurve> last;
        connect(&decimator, &tb::ui::BackgroundDecimator::decimated, this,
            [&](const tb::ui::DecimationRequest& request, const std::vector<tb::ui::DecimatedCurve>& got) {
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
        const auto expected = tb::ui::decimatedCurves(*curves, latest.range.lower, latest.range.upper, latest.columns);
        QCOMPARE(last.size(), expected->size());
        for (std::size_t c = 0; c < last.size(); ++c)
            QVERIFY(std::equal(last[c].points.begin(), last[c].points.end(), (*expected)[c].points.begin(),
                (*expected)[c].points.end(),
                [](const QCPGraphData& x, const QCPGraphData& y) { return x.key == y.key && x.value == y.value; }));
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
        const QVector<ComparedRun> data = runs(6, 60000);
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
        QTRY_VERIFY(rendersOf(charts, OverlayCharts::MemoryPanel) > renders[OverlayCharts::MemoryPanel]);
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
        const QVector<ComparedRun> data = runs(4, 50000);
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
        const QVector<ComparedRun> before = runs(3, kSteps), after = changedRuns(before, kSteps, how);
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
        connect(&charts, &OverlayCharts::curvesDecimated, this, [&] { shown.append(shownSteps(charts)); });
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
        QTest::addRow("wall time, validation after the last step") << true << int(tb::metrics::XAxis::WallSeconds);
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
        connect(&charts, &OverlayCharts::curvesDecimated, this, [&] { shown.append(shownSteps(charts)); });
        const int coalesced = charts.decimator().coalescedBuilds();

        int steps = kSteps + 1, building = steps; // the runs' length, and that of the build running
        charts.setRuns(followedRuns(steps, evalAfter));
        for (int round = 0; round < kRounds; ++round) {
            QVERIFY(gate->started.tryAcquire(1, 10000)); // the build of `building` runs
            for (int call = 0; call < kCallsPerBuild; ++call)
                charts.setRuns(followedRuns(++steps, evalAfter));
            gate->go.release();
            QTRY_COMPARE(shownSteps(charts), lastKey(followedRuns(building, false), charts.xAxis()));
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
        QCOMPARE(charts.curve(0, OverlayCharts::LossPanel)->keyAxis()->range().upper > shownSteps(charts), evalAfter);
        QCOMPARE(charts.curve(0, OverlayCharts::LossPanel)->keyAxis()->range(),
            reference.curve(0, OverlayCharts::LossPanel)->keyAxis()->range());
        const QString different = differentPoints(charts, reference);
        QVERIFY2(different.isEmpty(), qPrintable(different));
        QCOMPARE(largestDifference(charts.grab().toImage(), reference.grab().toImage(), charts), 0);
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
        charts->setRuns(runs(20, 100000));
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
