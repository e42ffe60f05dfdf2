// Repainting the Compare page's overlay with 50 runs of 100,000 steps each
// (loss, learning rate, tokens/s and memory: 20 million points), against
// repainting the same charts with no run in them, in the same process. Run
// under a display (xvfb-run) with the real widget:
//   xvfb-run -a build/default/tests/benchmarks/ui/bench_compare_overlay
#include "compare/overlay_charts.h"
#include "metrics/event.h"

#include <QApplication>
#include <QElapsedTimer>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

constexpr int kRuns = 50;
constexpr int kSteps = 100000;
constexpr int kWarmup = 5;
constexpr int kRepaints = 40;

// A run as its events fold: a noisy decaying loss, a cosine learning rate,
// tokens/s and memory that wander a little.
std::shared_ptr<const tb::metrics::RunHistory> syntheticRun(int index)
{
    using nlohmann::json;
    auto history = std::make_shared<tb::metrics::RunHistory>();
    history->apply(*tb::metrics::parseEvent(tb::metrics::makeEvent(tb::metrics::EventType::RunStart, 0, 1.0e9,
        {{"run_id", "run-" + std::to_string(index)}, {"world_size", 1}, {"config", json::object()}}).dump()));
    tb::metrics::Event step{tb::metrics::EventType::Step, "step", 0, 1.0e9, json::object()};
    for (int s = 1; s <= kSteps; ++s) {
        const double progress = double(s) / kSteps;
        const double noise = std::sin(s * 12.9898 + index * 78.233) * 0.05;
        step.timeSeconds = 1.0e9 + s * 0.5;
        step.body = {{"step", s}, {"loss", 2.0 + 2.0 * std::exp(-5 * progress) + 0.1 * index / kRuns + noise},
            {"lr", 1e-3 * 0.5 * (1 + std::cos(M_PI * progress))}, {"tokens", 4096},
            {"step_seconds", 0.5}, {"tokens_per_second", 8192 * (1 + noise)},
            {"mem_peak_bytes", int64_t(3e8 * (1 + 0.1 * noise))}};
        history->apply(step);
    }
    return history;
}

double medianRepaintMs(tb::ui::OverlayCharts& charts)
{
    std::vector<double> samples;
    for (int i = 0; i < kWarmup + kRepaints; ++i) {
        QElapsedTimer timer;
        timer.start();
        charts.replot(QCustomPlot::rpImmediateRefresh);
        QApplication::processEvents();
        if (i >= kWarmup)
            samples.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    tb::ui::OverlayCharts charts;
    charts.resize(1400, 1000);
    charts.show();
    QApplication::processEvents();
    const double emptyMs = medianRepaintMs(charts);

    QElapsedTimer building;
    building.start();
    QVector<tb::ui::ComparedRun> runs;
    for (int i = 0; i < kRuns; ++i)
        runs.append({QStringLiteral("run-%1").arg(i), syntheticRun(i), {}, {}});
    const double buildMs = double(building.nsecsElapsed()) / 1e6;

    QElapsedTimer loading;
    loading.start();
    charts.setRuns(runs);
    const double loadMs = double(loading.nsecsElapsed()) / 1e6;
    const double fullMs = medianRepaintMs(charts);

    std::printf("overlay, %d runs x %d steps (4 panels, %lld points)\n", kRuns, kSteps,
        4LL * kRuns * kSteps);
    std::printf("  histories folded          %9.1f ms (not the page's work: setup)\n", buildMs);
    std::printf("  setRuns (curves built)    %9.1f ms\n", loadMs);
    std::printf("  repaint, median of %d     %9.2f ms\n", kRepaints, fullMs);
    std::printf("  empty repaint (reference) %9.2f ms\n", emptyMs);
    std::printf("  ratio                     %9.1fx\n", fullMs / emptyMs);
    return 0;
}
