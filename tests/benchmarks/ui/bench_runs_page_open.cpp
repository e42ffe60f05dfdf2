// Opening a long run on the Runs page: from followRunFolder() to every step
// plotted, against reading and parsing the same file with EventFileReader
// alone in the same process, and the longest the UI thread went without
// serving its event loop meanwhile (a 5 ms timer's largest gap), then the
// opened run's charts replotted: as drawn, with every pen narrowed to one
// pixel, and with no curves. The loss is jagged as a real per-step loss is
// (a few percent off its trend each step), as a smooth one would hide what
// stroking a jagged curve costs. Run under a display with the real widgets:
//   xvfb-run -a build/default/tests/benchmarks/ui/bench_runs_page_open [STEPS]
// With --screenshot FILE, the page with the run opened is saved there too:
//   xvfb-run -a build/default/tests/benchmarks/ui/bench_runs_page_open --screenshot FILE [STEPS]
// With --moe, a mixture of experts' run (32 layers x 8 experts, Mixtral's
// shape, expert_tokens and router_aux_loss in every step) against the same
// run without the routing fields, both opened in this process:
//   xvfb-run -a build/default/tests/benchmarks/ui/bench_runs_page_open --moe [STEPS]
#include "metrics/event.h"
#include "metrics/event_file_reader.h"
#include "metrics/step_record.h"
#include "runs/routing_charts.h"
#include "runs/run_charts.h"
#include "runs/runs_page.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using tb::metrics::EventType;

constexpr int kMoeLayers = 32;
constexpr int kExperts = 8;
constexpr int kReplots = 9;

// One step's tokens per expert as the trainer counts them: 8,192 positions
// routed to k = 2 experts a layer, spread unevenly and differently each step.
nlohmann::json expertTokens(int step)
{
    nlohmann::json layers = nlohmann::json::array();
    uint32_t seed = uint32_t(step) * 2654435761u;
    for (int layer = 0; layer < kMoeLayers; ++layer) {
        nlohmann::json row = nlohmann::json::array();
        int64_t left = 2 * 8192;
        for (int expert = 0; expert + 1 < kExperts; ++expert) {
            seed = seed * 1664525u + 1013904223u;
            const int64_t count = 1024 + int64_t(seed >> 21) % 2048;
            row.push_back(count);
            left -= count;
        }
        row.push_back(std::max<int64_t>(left, 0));
        layers.push_back(std::move(row));
    }
    return layers;
}

QByteArray line(EventType type, double time, const nlohmann::json& fields)
{
    return QByteArray::fromStdString(tb::metrics::makeEvent(type, 0, time, fields).dump()) + "\n";
}

// A decaying loss, each step off its trend by up to 4% as batches differ:
// deterministic, so that every run of the benchmark draws the same curve.
double noisyLoss(int step)
{
    uint32_t seed = uint32_t(step) * 2654435761u;
    seed ^= seed >> 15;
    seed *= 2246822519u;
    seed ^= seed >> 13;
    const double offTrend = double(seed) / 4294967295.0 * 2.0 - 1.0;
    return 3.0 / (1.0 + 0.001 * step) * (1.0 + 0.04 * offTrend);
}

// A run's rank-0 stream: run_start, then a step a line with an evaluation
// every 100 steps, as the trainer writes it; a mixture of experts' steps
// also carry their routing.
QByteArray runEvents(int steps, bool routed)
{
    QByteArray text = line(EventType::RunStart, 1.0e9,
        {{"run_id", "bench"}, {"world_size", 1}, {"config", nlohmann::json::object()},
            {"total_steps", steps}});
    for (int step = 1; step <= steps; ++step) {
        tb::metrics::StepRecord record;
        record.step = step;
        record.loss = noisyLoss(step);
        record.learningRate = 1e-4;
        record.gradNorm = 0.8;
        record.tokens = 8192;
        record.stepSeconds = 0.9;
        record.tokensPerSecond = 9000.0 + step % 100;
        record.memAllocatedBytes = 2'000'000'000;
        record.memPeakBytes = 2'500'000'000;
        nlohmann::json fields = record.toFields();
        if (routed) {
            fields["expert_tokens"] = expertTokens(step);
            fields["router_aux_loss"] = 2.0 + 0.5 / step;
        }
        text += line(EventType::Step, 1.0e9 + step, fields);
        if (step % 100 == 0)
            text += line(EventType::Eval, 1.0e9 + step, {{"step", step}, {"loss", 2.5}});
    }
    return text;
}

bool writeRun(const QString& folder, int steps, bool routed)
{
    QFile file(folder + QStringLiteral("/events.jsonl"));
    return file.open(QIODevice::WriteOnly) && file.write(runEvents(steps, routed)) > 0;
}

// Median times of an immediate replot of the Runs page's charts.
struct Replots {
    double drawnMs = 0;
    double onePixelMs = 0; // every pen at most a pixel wide
    double emptyMs = 0; // axes, grid and legends only: the reference
};

struct Opening {
    double openMs = 0;
    double longestGapMs = 0;
    Replots replots;
};

double medianReplotMs(QCustomPlot* plot)
{
    std::vector<double> times;
    for (int i = 0; i < kReplots; ++i) {
        QElapsedTimer clock;
        clock.start();
        plot->replot(QCustomPlot::rpImmediateRefresh);
        times.push_back(double(clock.nsecsElapsed()) / 1e6);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// Leaves `charts` narrowed and then empty: only for a page about to go.
Replots measureReplots(tb::ui::RunCharts* charts)
{
    Replots replots;
    replots.drawnMs = medianReplotMs(charts);
    for (int i = 0; i < charts->graphCount(); ++i) {
        QPen pen = charts->graph(i)->pen();
        pen.setWidthF(std::min(pen.widthF(), 1.0));
        charts->graph(i)->setPen(pen);
    }
    replots.onePixelMs = medianReplotMs(charts);
    charts->clearCurves();
    replots.emptyMs = medianReplotMs(charts);
    return replots;
}

void printReplots(const Replots& replots)
{
    std::printf(
        "charts replot, median of %d: %.1f ms as drawn, %.1f ms with one-pixel pens (%.2fx), "
        "%.1f ms without curves (reference; as drawn %.2fx)\n",
        kReplots, replots.drawnMs, replots.onePixelMs, replots.drawnMs / replots.onePixelMs,
        replots.emptyMs, replots.drawnMs / replots.emptyMs);
}

bool everyStepPlotted(const tb::ui::RunsPage& page, int steps, bool routed)
{
    if (page.charts()->lossPointCount() < steps)
        return false;
    if (!routed)
        return true;
    const auto* routing = page.findChild<tb::ui::RoutingCharts*>();
    return routing && routing->balancePointCount() >= steps
        && routing->auxLossPointCount() >= steps;
}

// From followRunFolder() to every step plotted and drawn, on a new page,
// saved to `screenshot` unless empty.
Opening openRun(const QString& folder, int steps, bool routed, const QString& screenshot = {})
{
    tb::ui::RunsPage page;
    page.resize(1400, 900);
    page.show();
    QTimer heartbeat;
    heartbeat.setInterval(5);
    QElapsedTimer sinceBeat;
    Opening opening;
    QObject::connect(&heartbeat, &QTimer::timeout, [&] {
        opening.longestGapMs =
            std::max(opening.longestGapMs, double(sinceBeat.nsecsElapsed()) / 1e6);
        sinceBeat.restart();
    });
    QApplication::processEvents();
    heartbeat.start();
    sinceBeat.start();
    QElapsedTimer clock;
    clock.start();
    page.followRunFolder(folder);
    while (!everyStepPlotted(page, steps, routed))
        QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    page.charts()->replot(); // the last batch drawn, not only queued
    if (auto* routing = page.findChild<tb::ui::RoutingCharts*>())
        routing->replot();
    opening.openMs = double(clock.nsecsElapsed()) / 1e6;
    if (!screenshot.isEmpty() && !page.grab().save(screenshot))
        std::fprintf(stderr, "could not save %s\n", qPrintable(screenshot));
    opening.replots = measureReplots(page.charts());
    return opening;
}

// Reading and parsing the file with EventFileReader alone, on this thread.
double readerAloneMs(const QString& events, std::size_t* lines = nullptr)
{
    QElapsedTimer clock;
    clock.start();
    tb::metrics::EventFileReader reader(events.toStdString());
    std::size_t read = 0;
    do
        read += reader.poll()->size();
    while (reader.moreAvailable());
    if (lines)
        *lines = read;
    return double(clock.nsecsElapsed()) / 1e6;
}

// The default mode: a dense run against the reader alone.
int benchDense(int steps, const QString& screenshot)
{
    QTemporaryDir dir;
    if (!writeRun(dir.path(), steps, false))
        return 1;
    const QString events = dir.filePath(QStringLiteral("events.jsonl"));
    const double megabytes = double(QFile(events).size()) / 1e6;

    std::size_t lines = 0;
    const double referenceMs = readerAloneMs(events, &lines);
    const Opening opening = openRun(dir.path(), steps, false, screenshot);
    std::printf("run of %d steps, %zu lines, %.1f MB\n", steps, lines, megabytes);
    std::printf("reader alone (reference): %.0f ms\n", referenceMs);
    std::printf("Runs page, open to every step plotted: %.0f ms (%.2fx the reference)\n",
        opening.openMs, opening.openMs / referenceMs);
    std::printf("longest UI-thread gap while opening: %.1f ms\n", opening.longestGapMs);
    printReplots(opening.replots);
    return 0;
}

// The mixture of experts' run against the same steps without routing.
int benchMoe(int steps)
{
    QTemporaryDir dense;
    QTemporaryDir moe;
    if (!writeRun(dense.path(), steps, false) || !writeRun(moe.path(), steps, true))
        return 1;
    const auto events = [](const QTemporaryDir& dir) {
        return dir.filePath(QStringLiteral("events.jsonl"));
    };
    const auto megabytes = [&](const QTemporaryDir& dir) {
        return double(QFile(events(dir)).size()) / 1e6;
    };
    const double denseReaderMs = readerAloneMs(events(dense));
    const double moeReaderMs = readerAloneMs(events(moe));
    // The first page of a process pays for fonts and pixmap caches: not a
    // cost of either run.
    openRun(dense.path(), steps, false);
    const Opening denseOpening = openRun(dense.path(), steps, false);
    const Opening moeOpening = openRun(moe.path(), steps, true);
    std::printf(
        "run of %d steps; dense %.1f MB, mixture of experts (%d layers x %d experts) %.1f MB\n",
        steps, megabytes(dense), kMoeLayers, kExperts, megabytes(moe));
    std::printf("dense run, open to every step plotted: %.0f ms (longest UI-thread gap %.1f ms)\n",
        denseOpening.openMs, denseOpening.longestGapMs);
    std::printf("MoE run, open to every step plotted: %.0f ms (longest UI-thread gap %.1f ms)\n",
        moeOpening.openMs, moeOpening.longestGapMs);
    std::printf("MoE / dense: %.2fx\n", moeOpening.openMs / denseOpening.openMs);
    std::printf("reader alone (reference): dense %.0f ms, MoE %.0f ms (%.2fx)\n", denseReaderMs,
        moeReaderMs, moeReaderMs / denseReaderMs);
    std::printf("dense run's ");
    printReplots(denseOpening.replots);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    const bool moe = argc > 1 && std::strcmp(argv[1], "--moe") == 0;
    const bool screenshot = argc > 2 && std::strcmp(argv[1], "--screenshot") == 0;
    const int stepsArg = moe ? 2 : screenshot ? 3 : 1;
    const int steps =
        argc > stepsArg ? std::max(1, std::atoi(argv[stepsArg])) : (moe ? 5000 : 100000);
    return moe ? benchMoe(steps)
               : benchDense(steps, screenshot ? QString::fromLocal8Bit(argv[2]) : QString());
}
