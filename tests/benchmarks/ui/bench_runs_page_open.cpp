// Opening a long run on the Runs page: from followRunFolder() to every step
// plotted, against reading and parsing the same file with EventFileReader
// alone in the same process, and the longest the UI thread went without
// serving its event loop meanwhile (a 5 ms timer's largest gap). Run under a
// display with the real widgets:
//   xvfb-run -a build/default/tests/benchmarks/ui/bench_runs_page_open [STEPS]
#include "metrics/event.h"
#include "metrics/event_file_reader.h"
#include "metrics/step_record.h"
#include "runs/run_charts.h"
#include "runs/runs_page.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>

namespace {

using tb::metrics::EventType;

// A run's rank-0 stream: run_start, then a step a line with an evaluation
// every 100 steps, as the trainer writes it.
QByteArray runEvents(int steps)
{
    QByteArray text;
    text += QByteArray::fromStdString(tb::metrics::makeEvent(EventType::RunStart, 0, 1.0e9,
        {{"run_id", "bench"}, {"world_size", 1}, {"config", nlohmann::json::object()},
            {"total_steps", steps}})
            .dump())
        + "\n";
    for (int step = 1; step <= steps; ++step) {
        tb::metrics::StepRecord record;
        record.step = step;
        record.loss = 3.0 / (1.0 + 0.001 * step);
        record.learningRate = 1e-4;
        record.gradNorm = 0.8;
        record.tokens = 8192;
        record.stepSeconds = 0.9;
        record.tokensPerSecond = 9000.0 + step % 100;
        record.memAllocatedBytes = 2'000'000'000;
        record.memPeakBytes = 2'500'000'000;
        text += QByteArray::fromStdString(
                    tb::metrics::makeEvent(EventType::Step, 0, 1.0e9 + step, record.toFields()).dump())
            + "\n";
        if (step % 100 == 0)
            text += QByteArray::fromStdString(tb::metrics::makeEvent(EventType::Eval, 0, 1.0e9 + step,
                                                  {{"step", step}, {"loss", 2.5}})
                                                  .dump())
                + "\n";
    }
    return text;
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    const int steps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 100000;
    QTemporaryDir dir;
    const QString events = dir.filePath(QStringLiteral("events.jsonl"));
    {
        QFile file(events);
        if (!file.open(QIODevice::WriteOnly))
            return 1;
        file.write(runEvents(steps));
    }
    const double megabytes = double(QFile(events).size()) / 1e6;

    // Reference: the reader alone, on this thread.
    QElapsedTimer clock;
    clock.start();
    tb::metrics::EventFileReader reader(events.toStdString());
    std::size_t lines = 0;
    do
        lines += reader.poll()->size();
    while (reader.moreAvailable());
    const double referenceMs = double(clock.nsecsElapsed()) / 1e6;

    tb::ui::RunsPage page;
    page.resize(1400, 900);
    page.show();
    QTimer heartbeat;
    heartbeat.setInterval(5);
    QElapsedTimer sinceBeat;
    double longestGapMs = 0;
    QObject::connect(&heartbeat, &QTimer::timeout, [&] {
        longestGapMs = std::max(longestGapMs, double(sinceBeat.nsecsElapsed()) / 1e6);
        sinceBeat.restart();
    });
    QApplication::processEvents();
    heartbeat.start();
    sinceBeat.start();
    clock.restart();
    page.followRunFolder(dir.path());
    while (page.charts()->lossPointCount() < steps)
        QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    page.charts()->replot(); // the last batch drawn, not only queued
    const double openMs = double(clock.nsecsElapsed()) / 1e6;
    heartbeat.stop();

    std::printf("run of %d steps, %zu lines, %.1f MB\n", steps, lines, megabytes);
    std::printf("reader alone (reference): %.0f ms\n", referenceMs);
    std::printf("Runs page, open to every step plotted: %.0f ms (%.2fx the reference)\n", openMs,
        openMs / referenceMs);
    std::printf("longest UI-thread gap while opening: %.1f ms\n", longestGapMs);
    return 0;
}
