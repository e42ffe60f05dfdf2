// From a changed input to repainted charts on the Planner page, against the
// cost of repainting the same two charts with nothing in them, measured in
// the same process. Run under a display (xvfb-run) with the real widgets:
//   xvfb-run -a build/default/tests/benchmarks/ui/bench_planner_refresh
#include "planner/breakdown_chart.h"
#include "planner/plan_form.h"
#include "planner/planner_page.h"
#include "planner/what_if_chart.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QSpinBox>
#include <QStandardPaths>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

struct Stats {
    double medianMs = 0;
    double p95Ms = 0;
};

Stats summarise(std::vector<double> samples)
{
    std::sort(samples.begin(), samples.end());
    return {samples[samples.size() / 2], samples[samples.size() * 95 / 100]};
}

} // namespace

int main(int argc, char** argv)
{
    QStandardPaths::setTestModeEnabled(true);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("TunebenchBench"));

    tb::ui::PlannerPage page;
    page.resize(1600, 1000);
    page.show();
    QApplication::processEvents();
    auto* microBatch = page.findChild<QSpinBox*>(QStringLiteral("microBatchSpin"));
    if (!microBatch || !page.errorText().isEmpty()) {
        std::fprintf(stderr, "planner page not ready: %s\n", qPrintable(page.errorText()));
        return 1;
    }

    constexpr int kWarmup = 20;
    constexpr int kRuns = 200;
    std::vector<double> refresh;
    for (int i = 0; i < kWarmup + kRuns; ++i) {
        QElapsedTimer timer;
        timer.start();
        microBatch->setValue(i % 2 == 0 ? 4 : 5); // estimate, sweeps, models, queued replots
        page.breakdownChart()->replot(QCustomPlot::rpImmediateRefresh);
        page.whatIfChart()->replot(QCustomPlot::rpImmediateRefresh);
        QApplication::processEvents();
        if (i >= kWarmup)
            refresh.push_back(timer.nsecsElapsed() / 1e6);
    }

    // Reference: the same two charts, same size, repainted with no data.
    tb::ui::BreakdownChart emptyBreakdown;
    tb::ui::WhatIfChart emptyWhatIf;
    emptyBreakdown.resize(page.breakdownChart()->size());
    emptyWhatIf.resize(page.whatIfChart()->size());
    emptyBreakdown.show();
    emptyWhatIf.show();
    QApplication::processEvents();
    std::vector<double> reference;
    for (int i = 0; i < kWarmup + kRuns; ++i) {
        QElapsedTimer timer;
        timer.start();
        emptyBreakdown.replot(QCustomPlot::rpImmediateRefresh);
        emptyWhatIf.replot(QCustomPlot::rpImmediateRefresh);
        QApplication::processEvents();
        if (i >= kWarmup)
            reference.push_back(timer.nsecsElapsed() / 1e6);
    }

    const Stats ours = summarise(refresh);
    const Stats base = summarise(reference);
    std::printf("planner input change -> repainted charts: median %.2f ms, p95 %.2f ms (%d runs)\n",
        ours.medianMs, ours.p95Ms, kRuns);
    std::printf("reference, empty charts repainted:      median %.2f ms, p95 %.2f ms\n",
        base.medianMs, base.p95Ms);
    std::printf("ratio to reference: %.2fx; share of a 16 ms frame: %.0f %%\n",
        ours.medianMs / base.medianMs, 100.0 * ours.medianMs / 16.0);
    return 0;
}
