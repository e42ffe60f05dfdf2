// The GUI's consumers of event lines under mutated and hostile input (review
// M1): the lines a follower reads, mutated from real event files, go through
// the stream parser into the Runs page's RunView (summary, curves, routing
// and preference charts, messages) and, as histories, into the Compare
// page's runs table and overlay, each painted. Nothing may crash, trip a
// sanitizer (the asan preset runs this suite) or break a bound: the message
// list's, and the steps a view shows against the lines fed.
#include "../support/deep_json.h"
#include "../support/qt_test_paths.h"
#include "../support/text_mutator.h"

#include "compare/compare_follower.h"
#include "compare/overlay_charts.h"
#include "compare/runs_model.h"
#include "runs/run_view.h"

#include "metrics/event_stream_parser.h"
#include "metrics/run_catalog.h"

#include <QAbstractItemModelTester>
#include <QDirIterator>
#include <QFile>
#include <QtTest>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

// Every line of the suites' real event files and the event fuzz target's
// seeds: runs of every method, DPO steps, odd values.
std::vector<std::string> seedLines()
{
    std::vector<std::string> lines;
    for (const char* folder : {"tests/launch/data/runs", "tests/fuzz/corpus/event_consumers"}) {
        QDirIterator files(tb::test::qSourcePath(folder), {QStringLiteral("*.jsonl")}, QDir::Files,
            QDirIterator::Subdirectories);
        while (files.hasNext()) {
            QFile file(files.next());
            if (!file.open(QIODevice::ReadOnly))
                continue;
            for (const QByteArray& line : file.readAll().split('\n'))
                if (!line.isEmpty())
                    lines.push_back(line.toStdString());
        }
    }
    return lines;
}

// Lines no mutation of a real file makes: too deep, too long, terminal and
// HTML markup in a message, values of the wrong type where figures go.
std::vector<std::string> hostileLines()
{
    return {tb::test::deepJsonArray(),
        R"({"type":"step","rank":0,"time":1,"step":)" + tb::test::deepJsonObject() + "}",
        R"({"type":"warning","rank":0,"time":1,"message":")" + std::string(1 << 20, 'w') + "\"}",
        R"({"type":"error","rank":0,"time":1,"message":"\u001b[2J\u001b]0;owned\u0007<b>bold</b><img src=x>"})",
        R"({"type":"step","rank":0,"time":1,"step":3,"loss":null,"lr":"fast","tokens":-5})",
        R"({"type":"step","rank":0,"time":1,"step":4,"loss":1e308,"mem_peak_bytes":2.4e22})",
        R"({"type":"eval","rank":0,"time":1,"step":4,"loss":null})",
        R"({"type":"step","rank":0,"time":1,"step":5,"expert_tokens":[[1,2],[3,"x"],null]})",
        R"({"type":"step","rank":0,"time":1,"step":6,"dpo":{"chosen_reward":"a","margin":null}})",
        R"({"type":"run_end","rank":0,"time":1,"status":["completed"]})"};
}

} // namespace

class TestRunViewFuzz : public QObject {
    Q_OBJECT

private slots:
    void mutatedLinesNeverBreakTheViews()
    {
        const std::vector<std::string> seeds = seedLines();
        QVERIFY2(seeds.size() > 50, "the seed files were not found");
        std::mt19937_64 rng(20261128);
        tb::testutil::MutationOptions options;
        options.maxEdits = 4;
        const int mutants = tb::testutil::fuzzIterations(20000);

        QWidget window; // RunView's own show() picks its panels
        auto& view = *new tb::ui::RunView(&window);
        window.resize(1000, 700);
        view.resize(1000, 700);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        tb::metrics::EventStreamParser parser;
        std::string stream;
        uint64_t linesFed = 0;
        bool routingShown = false;
        bool preferenceShown = false;
        const auto feedSome = [&](bool paint) {
            // In pieces cut anywhere, as an SSH channel delivers them.
            while (!stream.empty()) {
                const std::size_t piece = std::min(stream.size(), 1 + rng() % 4096);
                const auto items = parser.feed(std::string_view(stream).substr(0, piece));
                stream.erase(0, piece);
                view.addLines(QVector<tb::metrics::StreamItem>(items.begin(), items.end()));
            }
            routingShown = routingShown || view.routingCharts();
            preferenceShown = preferenceShown || view.preferenceCharts();
            if (paint)
                QVERIFY(!window.grab().isNull());
        };
        const auto append = [&](const std::string& line) {
            stream += line + '\n';
            linesFed += uint64_t(std::count(line.begin(), line.end(), '\n')) + 1;
        };
        for (const std::string& line : hostileLines())
            append(line);
        feedSome(true);
        for (int i = 0; i < mutants; ++i) {
            const std::string& seed = seeds[rng() % seeds.size()];
            append(rng() % 4 == 0 ? seed : tb::testutil::mutateText(seed, rng, options));
            if (i % 50 == 49)
                feedSome(i % 500 == 499);
        }
        feedSome(true);
        QCOMPARE(parser.nextLineNumber(), linesFed + 1);
        QVERIFY(view.messageTexts().size() <= tb::ui::RunView::kMaxMessageRows + 1);
        QVERIFY(view.history().steps().size() <= std::size_t(linesFed));
        QVERIFY(!view.summaryText().isEmpty());
        // The mutants reached every panel, not only the parser's refusals.
        QVERIFY(!view.history().steps().empty());
        QVERIFY(routingShown && preferenceShown);
        qInfo("%llu lines: %zu steps shown, %lld messages",
            static_cast<unsigned long long>(linesFed), view.history().steps().size(),
            static_cast<long long>(view.messageTexts().size()));

        // The same history as the Compare page holds it: the runs table
        // (checked by Qt's model tester) and the overlay, painted.
        auto history = std::make_shared<const tb::metrics::RunHistory>(view.history());
        tb::ui::RunsModel runs;
        QAbstractItemModelTester tester(
            &runs, QAbstractItemModelTester::FailureReportingMode::QtTest);
        runs.setRuns({tb::metrics::summariseRun("/runs/fuzzed", *history)});
        for (int column = 0; column < runs.columnCount(); ++column) {
            runs.index(0, column).data(Qt::DisplayRole);
            runs.index(0, column).data(tb::ui::RunsModel::kSortRole);
        }
        tb::ui::OverlayCharts overlay;
        overlay.resize(900, 600);
        overlay.setRuns({tb::ui::ComparedRun{QStringLiteral("/runs/fuzzed"), history, {}, {}}});
        overlay.show();
        QVERIFY(QTest::qWaitForWindowExposed(&overlay));
        QVERIFY(!overlay.grab().isNull());
    }
};

QTEST_MAIN(TestRunViewFuzz)
#include "test_run_view_fuzz.moc"
