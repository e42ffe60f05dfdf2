// Repainting the Compare page's overlay with 50 runs of 100,000 steps each
// (loss, learning rate, tokens/s and memory: 20 million points), in one
// process, against two references: the same charts repainted empty, and
// every curve drawn again as each repaint did before the panels kept their
// curves as an image (QCustomPlot::toPainter on a pmNoCaching painter, which
// draws the graphs themselves). Also a pan: the x range moved, so each
// repaint decimates and draws every curve again, on the UI thread (the
// synchronous path) or on the thread pool, the panels showing their previous
// image moved meanwhile: for each, the UI thread's time per pan frame, the
// longest the UI thread was held while the exact curves came, and the time
// from the move until they were drawn. And a followed run growing: every
// run a step longer, handed over by setRuns as the page's follower does each
// second, with background decimation off and on: how long setRuns holds the
// UI thread, the longest a 5 ms timer on the UI thread waited meanwhile, and
// the time until every panel drew the new curves. And a followed run growing
// faster than its curves are built (setRuns every 250 ms with the first run
// a step longer, for 10 s): how many of the growths were shown, and the
// longest the curves went unchanged. Run under a display (xvfb-run) with
// the real widget (--follow-only: that last part alone):
//   xvfb-run -a build/default/tests/benchmarks/ui/bench_compare_overlay
#include "compare/overlay_charts.h"
#include "metrics/event.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

namespace {

constexpr int kRuns = 50;
constexpr int kSteps = 100000;
constexpr int kWarmup = 5;
constexpr int kRepaints = 40;
constexpr int kPans = 20;
constexpr int kGrowths = 7;

// One step of a run as its events fold: a noisy decaying loss, a cosine
// learning rate, tokens/s and memory that wander a little. `step`'s fields
// are overwritten: building a JSON object a step took most of the
// benchmark's time.
void setStep(tb::metrics::Event& step, int index, int s)
{
    const double progress = double(s) / kSteps;
    const double noise = std::sin(s * 12.9898 + index * 78.233) * 0.05;
    step.timeSeconds = 1.0e9 + s * 0.5;
    step.body["step"] = s;
    step.body["loss"] = 2.0 + 2.0 * std::exp(-5 * progress) + 0.1 * index / kRuns + noise;
    step.body["lr"] = 1e-3 * 0.5 * (1 + std::cos(M_PI * progress));
    step.body["tokens_per_second"] = 8192 * (1 + noise);
    step.body["mem_peak_bytes"] = int64_t(3e8 * (1 + 0.1 * noise));
}

tb::metrics::Event stepEvent()
{
    return {tb::metrics::EventType::Step, "step", 0, 1.0e9,
        {{"step", 0}, {"loss", 0.0}, {"lr", 0.0}, {"tokens", 4096}, {"step_seconds", 0.5},
            {"tokens_per_second", 0.0}, {"mem_peak_bytes", int64_t(0)}}};
}

std::shared_ptr<const tb::metrics::RunHistory> syntheticRun(int index)
{
    using nlohmann::json;
    auto history = std::make_shared<tb::metrics::RunHistory>();
    history->apply(*tb::metrics::parseEvent(tb::metrics::makeEvent(tb::metrics::EventType::RunStart,
        0, 1.0e9,
        {{"run_id", "run-" + std::to_string(index)}, {"world_size", 1},
            {"config", json::object()}}).dump()));
    tb::metrics::Event step = stepEvent();
    for (int s = 1; s <= kSteps; ++s) {
        setStep(step, index, s);
        history->apply(step);
    }
    return history;
}

// Every run one step longer, each a new snapshot as the Compare page's
// follower sends them (compare_follower.cpp).
QVector<tb::ui::ComparedRun> grownByOneStep(const QVector<tb::ui::ComparedRun>& runs)
{
    QVector<tb::ui::ComparedRun> grown = runs;
    tb::metrics::Event step = stepEvent();
    for (int i = 0; i < grown.size(); ++i) {
        auto history = std::make_shared<tb::metrics::RunHistory>(*runs[i].history);
        setStep(step, i, int(history->steps().size()) + 1);
        history->apply(step);
        grown[i].history = std::move(history);
    }
    return grown;
}

double medianMs(const std::function<void()>& repaint)
{
    std::vector<double> samples;
    for (int i = 0; i < kWarmup + kRepaints; ++i) {
        QElapsedTimer timer;
        timer.start();
        repaint();
        if (i >= kWarmup)
            samples.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

void replotNow(tb::ui::OverlayCharts& charts)
{
    charts.replot(QCustomPlot::rpImmediateRefresh);
    QApplication::processEvents();
}

// The whole plot with every curve drawn, as a replot drew it before.
void drawEveryCurve(tb::ui::OverlayCharts& charts, QImage& image)
{
    QCPPainter painter(&image);
    painter.setMode(QCPPainter::pmNoCaching);
    charts.toPainter(&painter, charts.width(), charts.height());
}

struct PanFigures {
    double frameMs = 0; // the move and the replot that shows it, median
    double longestMs = 0; // the longest the UI thread was held until the exact curves, median
    double exactMs = 0; // from the move until the exact curves were drawn, median
};

bool exactCurvesDrawn(
    const tb::ui::OverlayCharts& charts, const int (&renders)[tb::ui::OverlayCharts::PanelCount])
{
    for (int p = 0; p < tb::ui::OverlayCharts::PanelCount; ++p)
        if (charts.curveRenderCount(tb::ui::OverlayCharts::Panel(p)) == renders[p])
            return false;
    return !charts.isDecimating();
}

// One pan as a drag's frame would do it, then the event loop run until the
// exact curves are drawn, each turn of it timed: what a user waits for,
// and how long the UI thread is held at a time meanwhile.
PanFigures panOnce(tb::ui::OverlayCharts& charts, const QCPRange& to)
{
    int renders[tb::ui::OverlayCharts::PanelCount];
    for (int p = 0; p < tb::ui::OverlayCharts::PanelCount; ++p)
        renders[p] = charts.curveRenderCount(tb::ui::OverlayCharts::Panel(p));
    QElapsedTimer sinceMove;
    sinceMove.start();
    charts.curve(0, tb::ui::OverlayCharts::LossPanel)->keyAxis()->setRange(to);
    replotNow(charts);
    PanFigures figures;
    figures.frameMs = figures.longestMs = double(sinceMove.nsecsElapsed()) / 1e6;
    while (!exactCurvesDrawn(charts, renders)) {
        QThread::usleep(200); // idle, as between a drag's mouse events
        QElapsedTimer turn;
        turn.start();
        QApplication::processEvents();
        figures.longestMs = std::max(figures.longestMs, double(turn.nsecsElapsed()) / 1e6);
    }
    figures.exactMs = double(sinceMove.nsecsElapsed()) / 1e6;
    return figures;
}

// Pans by half a percent, back and forth, each left to finish: medians.
PanFigures medianPan(tb::ui::OverlayCharts& charts, bool background)
{
    charts.setBackgroundDecimation(background);
    QCPAxis* axis = charts.curve(0, tb::ui::OverlayCharts::LossPanel)->keyAxis();
    const QCPRange start = axis->range();
    std::vector<double> frame, longest, exact;
    for (int i = 0; i < kWarmup + kPans; ++i) {
        const PanFigures f = panOnce(charts, start + start.size() / 200 * (i % 2 ? 1 : -1));
        if (i >= kWarmup) {
            frame.push_back(f.frameMs);
            longest.push_back(f.longestMs);
            exact.push_back(f.exactMs);
        }
    }
    panOnce(charts, start);
    for (auto* samples : {&frame, &longest, &exact})
        std::sort(samples->begin(), samples->end());
    return {frame[frame.size() / 2], longest[longest.size() / 2], exact[exact.size() / 2]};
}

// A drag: a move every 16 ms for `frames` frames, the event loop run in
// between; the UI thread's longest frame (a move and its replot) and
// longest other turn of the event loop (an answer applied and drawn).
void drag(tb::ui::OverlayCharts& charts, int frames, double& longestFrameMs, double& longestTurnMs)
{
    charts.setBackgroundDecimation(true);
    QCPAxis* axis = charts.curve(0, tb::ui::OverlayCharts::LossPanel)->keyAxis();
    const QCPRange start = axis->range();
    longestFrameMs = longestTurnMs = 0;
    for (int i = 0; i < frames; ++i) {
        QElapsedTimer frame;
        frame.start();
        axis->setRange(start + start.size() / 400 * (i % 40 < 20 ? i % 20 : 20 - i % 20));
        replotNow(charts);
        longestFrameMs = std::max(longestFrameMs, double(frame.nsecsElapsed()) / 1e6);
        while (frame.nsecsElapsed() < 16'000'000) {
            QThread::usleep(200);
            QElapsedTimer turn;
            turn.start();
            QApplication::processEvents();
            longestTurnMs = std::max(longestTurnMs, double(turn.nsecsElapsed()) / 1e6);
        }
    }
    axis->setRange(start);
}

struct GrowthFigures {
    double heldMs = 0; // setRuns itself
    double gapMs =
        0; // the longest gap between two ticks of a 5 ms timer until the new curves were drawn
    double drawnMs = 0; // from setRuns until every panel drew the new curves
};

// Until every panel has drawn curves decimated after `decimations`, with no
// decimation still to come: the panels' render counts are taken at the first
// replot after the new curves were decimated, on the UI thread or the pool.
class DrawnWatch : public QObject {
public:
    explicit DrawnWatch(tb::ui::OverlayCharts& charts)
        : m_charts(charts)
        , m_decimations(charts.decimationCount())
    {
        connect(&charts, &QCustomPlot::beforeReplot, this, [this] {
            if (!m_sampled && m_charts.decimationCount() > m_decimations) {
                m_sampled = true;
                for (int p = 0; p < tb::ui::OverlayCharts::PanelCount; ++p)
                    m_renders[p] = m_charts.curveRenderCount(tb::ui::OverlayCharts::Panel(p));
            }
        });
    }
    bool drawn() const
    {
        if (!m_sampled || m_charts.isDecimating())
            return false;
        for (int p = 0; p < tb::ui::OverlayCharts::PanelCount; ++p)
            if (m_charts.curveRenderCount(tb::ui::OverlayCharts::Panel(p)) == m_renders[p])
                return false;
        return true;
    }

private:
    tb::ui::OverlayCharts& m_charts;
    int m_decimations;
    bool m_sampled = false;
    int m_renders[tb::ui::OverlayCharts::PanelCount] = {};
};

// One follower tick: setRuns called from the event loop with every run a
// step longer, and the loop run until the new curves are drawn and the 5 ms
// timer has ticked once more, every gap between its ticks timed.
GrowthFigures growOnce(tb::ui::OverlayCharts& charts, const QVector<tb::ui::ComparedRun>& grown)
{
    GrowthFigures figures;
    QElapsedTimer clock, sinceTick;
    QTimer ticker;
    ticker.setTimerType(Qt::PreciseTimer);
    ticker.setInterval(5);
    DrawnWatch watch(charts);
    bool drawn = false;
    QEventLoop loop;
    QObject::connect(&ticker, &QTimer::timeout, &loop, [&] {
        figures.gapMs = std::max(figures.gapMs, double(sinceTick.nsecsElapsed()) / 1e6);
        sinceTick.start();
        if (drawn
            || (clock.isValid() && clock.elapsed() > 60'000)) // never drawn: a bug, not a figure
            loop.quit();
    });
    QObject::connect(&charts, &QCustomPlot::afterReplot, &loop, [&] {
        if (!drawn && watch.drawn()) {
            drawn = true;
            figures.drawnMs = double(clock.nsecsElapsed()) / 1e6;
        }
    });
    QTimer::singleShot(0, &loop, [&] {
        clock.start();
        charts.setRuns(grown);
        figures.heldMs = double(clock.nsecsElapsed()) / 1e6;
    });
    sinceTick.start();
    ticker.start();
    loop.exec();
    return figures;
}

struct FollowFigures {
    int calls = 0; // setRuns
    int shown = 0; // new curves applied
    double longestWaitMs = 0; // the curves unchanged, from the first call
};

// The first run a step longer, as one followed run grows: copying every
// history (grownByOneStep) would be the benchmark's own load on the UI
// thread between the calls.
QVector<tb::ui::ComparedRun> firstGrown(const QVector<tb::ui::ComparedRun>& runs)
{
    QVector<tb::ui::ComparedRun> grown = runs;
    auto history = std::make_shared<tb::metrics::RunHistory>(*runs[0].history);
    tb::metrics::Event step = stepEvent();
    setStep(step, 0, int(history->steps().size()) + 1);
    history->apply(step);
    grown[0].history = std::move(history);
    return grown;
}

// setRuns every `intervalMs` for `durationMs`, background decimation on;
// then until the last runs are shown.
FollowFigures followFaster(tb::ui::OverlayCharts& charts, QVector<tb::ui::ComparedRun>& runs,
    int intervalMs, int durationMs)
{
    charts.setBackgroundDecimation(true);
    FollowFigures figures;
    const void* shownCurves = charts.curveSeries().get();
    QElapsedTimer clock, sinceShown;
    QEventLoop loop;
    QTimer ticker;
    ticker.setInterval(intervalMs);
    QObject::connect(&ticker, &QTimer::timeout, &loop, [&] {
        if (clock.elapsed() >= durationMs) {
            loop.quit();
            return;
        }
        runs = firstGrown(runs);
        charts.setRuns(runs);
        ++figures.calls;
    });
    QObject::connect(&charts, &tb::ui::OverlayCharts::curvesDecimated, &loop, [&] {
        if (std::exchange(shownCurves, charts.curveSeries().get()) == shownCurves)
            return; // a view's curves, not new runs'
        ++figures.shown;
        figures.longestWaitMs =
            std::max(figures.longestWaitMs, double(sinceShown.nsecsElapsed()) / 1e6);
        sinceShown.start();
    });
    clock.start();
    sinceShown.start();
    ticker.start();
    loop.exec();
    figures.longestWaitMs =
        std::max(figures.longestWaitMs, double(sinceShown.nsecsElapsed()) / 1e6);
    while (charts.isDecimating())
        QApplication::processEvents(QEventLoop::WaitForMoreEvents, 100);
    return figures;
}

// Follower ticks, each run a step longer every time: medians.
GrowthFigures medianGrowth(
    tb::ui::OverlayCharts& charts, QVector<tb::ui::ComparedRun>& runs, bool background)
{
    charts.setBackgroundDecimation(background);
    replotNow(charts);
    std::vector<double> held, gap, drawn;
    for (int i = 0; i < kGrowths; ++i) {
        runs = grownByOneStep(runs);
        const GrowthFigures f = growOnce(charts, runs);
        held.push_back(f.heldMs);
        gap.push_back(f.gapMs);
        drawn.push_back(f.drawnMs);
    }
    for (auto* samples : {&held, &gap, &drawn})
        std::sort(samples->begin(), samples->end());
    return {held[held.size() / 2], gap[gap.size() / 2], drawn[drawn.size() / 2]};
}

int printFollow(tb::ui::OverlayCharts& charts, QVector<tb::ui::ComparedRun>& runs)
{
    const FollowFigures f = followFaster(charts, runs, 250, 10'000);
    std::printf("followed run, setRuns every 250 ms for 10 s (background): %d calls, %d shown, "
                "curves unchanged at most %.0f ms, builds dropped unbuilt %d\n",
        f.calls, f.shown, f.longestWaitMs, charts.decimator().coalescedBuilds());
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    tb::ui::OverlayCharts charts;
    charts.resize(1400, 1000);
    charts.show();
    QApplication::processEvents();
    const double emptyMs = medianMs([&] { replotNow(charts); });

    QElapsedTimer building;
    building.start();
    QVector<tb::ui::ComparedRun> runs;
    for (int i = 0; i < kRuns; ++i)
        runs.append({QStringLiteral("run-%1").arg(i), syntheticRun(i), {}, {}});
    const double buildMs = double(building.nsecsElapsed()) / 1e6;

    QElapsedTimer loading;
    // Loaded on the UI thread, so that the repaints below have every curve.
    charts.setBackgroundDecimation(false);
    loading.start();
    charts.setRuns(runs);
    replotNow(charts);
    charts.setBackgroundDecimation(true);
    const double loadMs = double(loading.nsecsElapsed()) / 1e6;
    if (QCoreApplication::arguments().contains(QStringLiteral("--follow-only")))
        return printFollow(charts, runs);
    const int decimations = charts.decimationCount();
    const int renders = charts.curveRenderCount(tb::ui::OverlayCharts::LossPanel);
    const double fullMs = medianMs([&] { replotNow(charts); });
    const int decimatedAgain = charts.decimationCount() - decimations;
    const int drawnAgain = charts.curveRenderCount(tb::ui::OverlayCharts::LossPanel) - renders;
    QImage image(charts.size(), QImage::Format_ARGB32_Premultiplied);
    const double everyCurveMs = medianMs([&] { drawEveryCurve(charts, image); });
    const PanFigures sync = medianPan(charts, false);
    const PanFigures background = medianPan(charts, true);
    double dragFrameMs = 0, dragTurnMs = 0;
    drag(charts, 120, dragFrameMs, dragTurnMs);
    const GrowthFigures grownSync = medianGrowth(charts, runs, false);
    const GrowthFigures grown = medianGrowth(charts, runs, true);

    std::printf("overlay, %d runs x %d steps (4 panels, %lld points), %dx%d\n", kRuns, kSteps,
        4LL * kRuns * kSteps, charts.width(), charts.height());
    std::printf(
        "  histories folded               %9.1f ms (not the page's work: setup)\n", buildMs);
    std::printf("  setRuns and first replot       %9.1f ms (background decimation off)\n", loadMs);
    std::printf(
        "  repaint, median of %d          %9.2f ms (curves decimated %d, drawn %d times again)\n",
        kRepaints, fullMs, decimatedAgain, drawnAgain);
    std::printf("  every curve drawn (before)     %9.2f ms\n", everyCurveMs);
    std::printf("  empty repaint (reference)      %9.2f ms\n", emptyMs);
    std::printf("  ratio repaint / before         %9.2fx\n", fullMs / everyCurveMs);
    std::printf("  ratio repaint / empty          %9.2fx\n", fullMs / emptyMs);
    std::printf("pan by half a percent, median of %d   UI thread per frame   longest UI turn   "
                "exact curves drawn\n",
        kPans);
    std::printf("  synchronous (decimated on the UI thread) %9.2f ms %14.2f ms %14.2f ms\n",
        sync.frameMs, sync.longestMs, sync.exactMs);
    std::printf("  background (previous image moved)        %9.2f ms %14.2f ms %14.2f ms\n",
        background.frameMs, background.longestMs, background.exactMs);
    std::printf("  ratio background / synchronous           %9.2fx %14.2fx %14.2fx\n",
        background.frameMs / sync.frameMs, background.longestMs / sync.longestMs,
        background.exactMs / sync.exactMs);
    std::printf("drag, a move every 16 ms for 120 frames (background): longest frame %.2f ms, "
                "longest other turn %.2f ms, "
                "jobs stopped early %d\n",
        dragFrameMs, dragTurnMs, charts.decimator().stoppedJobs());
    std::printf(
        "every run a step longer (setRuns, as the follower each second), median of %d\n", kGrowths);
    std::printf(
        "                                  setRuns held   longest 5 ms timer gap   until drawn\n");
    std::printf("  background decimation off       %9.2f ms %18.2f ms %14.2f ms\n",
        grownSync.heldMs, grownSync.gapMs, grownSync.drawnMs);
    std::printf("  background decimation on        %9.2f ms %18.2f ms %14.2f ms\n", grown.heldMs,
        grown.gapMs, grown.drawnMs);
    std::printf("  ratio on / off                  %9.2fx %18.2fx %14.2fx\n",
        grown.heldMs / grownSync.heldMs, grown.gapMs / grownSync.gapMs,
        grown.drawnMs / grownSync.drawnMs);
    std::printf("  ratio on / empty repaint        %9.2fx %18.2fx\n", grown.heldMs / emptyMs,
        grown.gapMs / emptyMs);
    return printFollow(charts, runs);
}
