// The GUI's cold start: the real tunebench binary started as a new process,
// timed from just before it is started to its main window's first frame
// (painted on its first expose and flushed to the display), as the window
// itself reports it (TUNEBENCH_STARTUP_PROBE=1, ui/startup_probe.h) on the
// clock this process read. The reference: an empty QWidget of the same
// size started and probed the same way, so the ratio is what Tunebench adds
// to what any Qt window costs here. Runs alternate between the two; settings
// come from an empty temporary folder (no saved window state, the planner
// page first). Libraries are in the page cache after the first run: cold
// means a new process, not an empty disk cache. Under a display:
//   xvfb-run -a -s "-screen 0 1600x1000x24" build/default/tests/benchmarks/ui/bench_gui_cold_start
#include "../../support/test_paths.h"

#include <QCoreApplication>
#include <QProcess>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

namespace {

constexpr int kWarmup = 2;
constexpr int kRuns = 15;

// Milliseconds from start to first frame, or nothing where the program did
// not report one.
std::optional<double> coldStartMs(const QString& program, const QString& configDir)
{
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("TUNEBENCH_STARTUP_PROBE"), QStringLiteral("1"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), configDir);
    process.setProcessEnvironment(env);
    process.setProcessChannelMode(QProcess::SeparateChannels);
    const auto started = std::chrono::steady_clock::now().time_since_epoch();
    process.start(program, {});
    if (!process.waitForFinished(60000)) {
        process.kill();
        process.waitForFinished();
        return std::nullopt;
    }
    const QList<QByteArray> words = process.readAllStandardOutput().simplified().split(' ');
    const qsizetype at = words.indexOf("first-frame-ns");
    if (process.exitCode() != 0 || at < 0 || at + 1 >= words.size())
        return std::nullopt;
    const double frameNs = words[at + 1].toDouble();
    return (frameNs - double(std::chrono::duration_cast<std::chrono::nanoseconds>(started).count()))
        / 1e6;
}

double median(std::vector<double> samples)
{
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    const QString gui = QString::fromUtf8(tb::test::guiProgram()),
                  bare = QString::fromUtf8(tb::test::bareWindowProgram());
    QTemporaryDir config;
    std::vector<double> guiMs, bareMs;
    for (int i = 0; i < kWarmup + kRuns; ++i) {
        const std::optional<double> g = coldStartMs(gui, config.path()),
                                    b = coldStartMs(bare, config.path());
        if (!g || !b) {
            std::fprintf(stderr, "no first frame reported by %s (is there a display?)\n",
                qPrintable(!g ? gui : bare));
            return 1;
        }
        if (i >= kWarmup) {
            guiMs.push_back(*g);
            bareMs.push_back(*b);
        }
    }
    std::printf("cold start to the first frame, median of %d (min-max)\n", kRuns);
    std::printf("  tunebench GUI            %8.1f ms (%.1f-%.1f)\n", median(guiMs),
        *std::min_element(guiMs.begin(), guiMs.end()),
        *std::max_element(guiMs.begin(), guiMs.end()));
    std::printf("  bare QWidget (reference) %8.1f ms (%.1f-%.1f)\n", median(bareMs),
        *std::min_element(bareMs.begin(), bareMs.end()),
        *std::max_element(bareMs.begin(), bareMs.end()));
    std::printf("  ratio                    %8.2fx\n", median(guiMs) / median(bareMs));
    return 0;
}
