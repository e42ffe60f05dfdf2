#pragma once

// What the overlay's background suites share (test_overlay_background: pans,
// zooms and closing; test_overlay_builds: new runs built on the pool): runs,
// the changes a row makes, image comparisons, and ways to hold or drain the
// thread pool so that what shows before an answer is seen for sure.
#include "compare/curve_decimation.h"
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

namespace tb::test::overlay {

using tb::ui::ComparedRun;
using tb::ui::OverlayCharts;

inline QVector<ComparedRun> runs(int count, int steps)
{
    QVector<ComparedRun> out;
    for (int i = 0; i < count; ++i)
        out.append({QStringLiteral("run-%1").arg(i), tb::test::zigzagRun(i, steps), {}, {}});
    return out;
}

inline QRect panelRect(const OverlayCharts& charts, int panel)
{
    return charts.curve(0, OverlayCharts::Panel(panel))->keyAxis()->axisRect()->rect();
}

inline int rendersOf(const OverlayCharts& charts, int panel)
{
    return charts.curveRenderCount(OverlayCharts::Panel(panel));
}

// The change a row makes, to the overlay under test and to its reference.
inline void change(OverlayCharts& charts, const QString& how)
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
inline bool curvePixel(QRgb c)
{
    return std::max({qRed(c), qGreen(c), qBlue(c)}) - std::min({qRed(c), qGreen(c), qBlue(c)}) > 40;
}

inline bool backgroundPixel(QRgb c)
{
    return qRed(c) == 255 && qGreen(c) == 255 && qBlue(c) == 255;
}

// Curve pixels inside the panels, `dx` columns apart, that differ, in the
// part of each panel both images show, out of the legend (which stays); the
// grid's grey dots are left out: they stay where the ticks put them.
inline int movedMismatches(
    const QImage& before, const QImage& after, const OverlayCharts& charts, int dx)
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
                    || (curvePixel(was) && backgroundPixel(is))
                    || (backgroundPixel(was) && curvePixel(is));
            }
    }
    return curve > 1000 ? mismatches : -1; // -1: no curve to compare
}

// Inside the panels, where both images reach (an image of the window before
// it was widened is narrower than the panels now).
inline int largestDifference(const QImage& a, const QImage& b, const OverlayCharts& charts)
{
    int largest = 0;
    for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
        const QRect panel = panelRect(charts, p) & a.rect() & b.rect();
        for (int row = panel.top(); row <= panel.bottom(); ++row)
            for (int column = panel.left(); column <= panel.right(); ++column) {
                const QRgb x = a.pixel(column, row), y = b.pixel(column, row);
                for (int shift : {0, 8, 16, 24})
                    largest = std::max(
                        largest, std::abs(int((x >> shift) & 0xff) - int((y >> shift) & 0xff)));
            }
    }
    return largest;
}

inline QString differentPoints(const OverlayCharts& a, const OverlayCharts& b)
{
    for (int run = 0; run < a.runCount(); ++run)
        for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
            const QCPGraphDataContainer &x = *a.curve(run, OverlayCharts::Panel(p))->data(),
                                        &y = *b.curve(run, OverlayCharts::Panel(p))->data();
            const bool same = std::equal(x.constBegin(), x.constEnd(), y.constBegin(), y.constEnd(),
                [](const QCPGraphData& u, const QCPGraphData& v) {
                    return u.key == v.key && u.value == v.value;
                });
            if (!same)
                return QStringLiteral("run %1, panel %2: %3 points against %4")
                    .arg(run)
                    .arg(p)
                    .arg(x.size())
                    .arg(y.size());
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
inline void settle(OverlayCharts& charts)
{
    QTRY_VERIFY(!charts.isDecimating());
    for (int p = 0; p < OverlayCharts::PanelCount; ++p) // a panel a replot
        charts.replot(QCustomPlot::rpImmediateRefresh);
    QTest::qWait(20);
}

// Every job on the pool returned and its answer delivered: what a stale job
// could still do, it has done.
inline void drainPool()
{
    QVERIFY(QThreadPool::globalInstance()->waitForDone(5000));
    QCoreApplication::processEvents();
}

// The runs a row hands to setRuns after `before` (each run `steps` long):
// one or every run a step longer, a run added or one removed.
inline QVector<ComparedRun> changedRuns(
    const QVector<ComparedRun>& before, int steps, const QString& how)
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
inline QList<double> lastKeys(const OverlayCharts& charts)
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
inline double shownSteps(const OverlayCharts& charts)
{
    const auto& curves = *charts.curveSeries();
    return curves.empty() || curves.front().keys.empty() ? -1 : curves.front().keys.back();
}

// The first run's last x on `axis`, as shownSteps() reads it.
inline double lastKey(const QVector<ComparedRun>& runs, tb::metrics::XAxis axis)
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
inline QVector<ComparedRun> followedRuns(int steps, bool evalAfter)
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
inline bool holdsView(const OverlayCharts& charts)
{
    const QCPAxis* keys = charts.curve(0, OverlayCharts::LossPanel)->keyAxis();
    const tb::ui::CurveSeries& whole = charts.curveSeries()->front();
    const tb::ui::DecimatedCurve view = tb::ui::decimatedCurve(whole.keys, whole.values,
        keys->range().lower, keys->range().upper, std::max(1, keys->axisRect()->width()));
    const QCPGraphDataContainer& shown = *charts.curve(0, OverlayCharts::LossPanel)->data();
    return std::equal(shown.constBegin(), shown.constEnd(), view.points.begin(), view.points.end(),
        [](const QCPGraphData& u, const QCPGraphData& v) {
            return u.key == v.key && u.value == v.value;
        });
}

// An overlay shown and drawn with `runs`.
inline void showWith(OverlayCharts& charts, const QVector<ComparedRun>& runs, bool background)
{
    charts.setBackgroundDecimation(background);
    charts.resize(900, 700);
    charts.show();
    QVERIFY(QTest::qWaitForWindowExposed(&charts));
    charts.setRuns(runs);
    charts.replot(QCustomPlot::rpImmediateRefresh);
    settle(charts);
}

} // namespace tb::test::overlay
