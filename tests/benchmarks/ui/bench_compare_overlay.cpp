// Repainting the Compare page's overlay with 50 runs of 100,000 steps each
// (loss, learning rate, tokens/s and memory: 20 million points), in one
// process, against two references: the same charts repainted empty, and
// every curve drawn again as each repaint did before the panels kept their
// curves as an image (QCustomPlot::toPainter on a pmNoCaching painter, which
// draws the graphs themselves). Also a pan: the x range moved, so each
// repaint decimates and draws every curve again. Run under a display
// (xvfb-run) with the real widget:
//   xvfb-run -a build/default/tests/benchmarks/ui/bench_compare_overlay
#include "compare/overlay_charts.h"
#include "metrics/event.h"

#include <QApplication>
#include <QElapsedTimer>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

constexpr int kRuns = 50;
constexpr int kSteps = 100000;
constexpr int kWarmup = 5;
constexpr int kRepaints = 40;

// A run as its events fold: a noisy decaying loss, a cosine learning rate,
// tokens/s and memory that wander a little. One event's fields are
// overwritten step by step: building a JSON object a step took most of the
// benchmark's time.
std::shared_ptr<const tb::metrics::RunHistory> syntheticRun(int index)
{
    using nlohmann::json;
    auto history = std::make_shared<tb::metrics::RunHistory>();
    history->apply(*tb::metrics::parseEvent(tb::metrics::makeEvent(tb::metrics::EventType::RunStart, 0, 1.0e9,
        {{"run_id", "run-" + std::to_string(index)}, {"world_size", 1}, {"config", json::object()}}).dump()));
    tb::metrics::Event step{tb::metrics::EventType::Step, "step", 0, 1.0e9,
        {{"step", 0}, {"loss", 0.0}, {"lr", 0.0}, {"tokens", 4096}, {"step_seconds", 0.5},
            {"tokens_per_second", 0.0}, {"mem_peak_bytes", int64_t(0)}}};
    for (int s = 1; s <= kSteps; ++s) {
        const double progress = double(s) / kSteps;
        const double noise = std::sin(s * 12.9898 + index * 78.233) * 0.05;
        step.timeSeconds = 1.0e9 + s * 0.5;
        step.body["step"] = s;
        step.body["loss"] = 2.0 + 2.0 * std::exp(-5 * progress) + 0.1 * index / kRuns + noise;
        step.body["lr"] = 1e-3 * 0.5 * (1 + std::cos(M_PI * progress));
        step.body["tokens_per_second"] = 8192 * (1 + noise);
        step.body["mem_peak_bytes"] = int64_t(3e8 * (1 + 0.1 * noise));
        history->apply(step);
    }
    return history;
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

// Each repaint after moving the x range by a small step, back and forth.
double medianPanMs(tb::ui::OverlayCharts& charts)
{
    QCPAxis* axis = charts.curve(0, tb::ui::OverlayCharts::LossPanel)->keyAxis();
    const QCPRange start = axis->range();
    const double step = start.size() / 200;
    int i = 0;
    const double ms = medianMs([&] {
        axis->setRange(start + step * (i++ % 2 ? 1 : -1));
        replotNow(charts);
    });
    axis->setRange(start);
    return ms;
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
    loading.start();
    charts.setRuns(runs);
    replotNow(charts);
    const double loadMs = double(loading.nsecsElapsed()) / 1e6;
    const int decimations = charts.decimationCount();
    const int renders = charts.curveRenderCount(tb::ui::OverlayCharts::LossPanel);
    const double fullMs = medianMs([&] { replotNow(charts); });
    const int decimatedAgain = charts.decimationCount() - decimations;
    const int drawnAgain = charts.curveRenderCount(tb::ui::OverlayCharts::LossPanel) - renders;
    QImage image(charts.size(), QImage::Format_ARGB32_Premultiplied);
    const double everyCurveMs = medianMs([&] { drawEveryCurve(charts, image); });
    const double panMs = medianPanMs(charts);

    std::printf("overlay, %d runs x %d steps (4 panels, %lld points), %dx%d\n", kRuns, kSteps,
        4LL * kRuns * kSteps, charts.width(), charts.height());
    std::printf("  histories folded               %9.1f ms (not the page's work: setup)\n", buildMs);
    std::printf("  setRuns and first replot       %9.1f ms\n", loadMs);
    std::printf("  repaint, median of %d          %9.2f ms (curves decimated %d, drawn %d times again)\n",
        kRepaints, fullMs, decimatedAgain, drawnAgain);
    std::printf("  every curve drawn (before)     %9.2f ms\n", everyCurveMs);
    std::printf("  empty repaint (reference)      %9.2f ms\n", emptyMs);
    std::printf("  pan repaint (decimate + draw)  %9.2f ms\n", panMs);
    std::printf("  ratio repaint / before         %9.2fx\n", fullMs / everyCurveMs);
    std::printf("  ratio repaint / empty          %9.2fx\n", fullMs / emptyMs);
    return 0;
}
