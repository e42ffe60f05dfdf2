// A mixture of experts' routing from its step events (expert_tokens,
// router_aux_loss; docs/EVENTS.md): the balance figures of known spreads,
// and malformed fields reported and skipped. The events are written to a
// file and read back by EventFileReader, folded by RunHistory, as the Runs
// page does.
#include "event_specs.h"
#include "metrics/event.h"
#include "metrics/event_file_reader.h"
#include "metrics/expert_routing.h"
#include "metrics/run_history.h"
#include "metrics/step_record.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using nlohmann::json;
using tb::metrics::busiestLoadRatio;
using tb::metrics::EventFileReader;
using tb::metrics::EventType;
using tb::metrics::makeEvent;
using tb::metrics::RunHistory;
using tb::metrics::StepRecord;

namespace {

// A step as the trainer writes it, with the routing fields given as JSON
// text (empty: the field is left out).
std::string stepLine(int step, const QString& expertTokens, const QString& auxLoss = {})
{
    StepRecord record;
    record.step = step;
    record.loss = 2.0;
    record.tokens = 64;
    std::string line = makeEvent(EventType::Step, 0, 1.0e9 + step, record.toFields()).dump();
    // Spliced as text, so that a malformed value reaches the reader as written.
    line.pop_back();
    if (!expertTokens.isEmpty())
        line += ",\"expert_tokens\":" + expertTokens.toStdString();
    if (!auxLoss.isEmpty())
        line += ",\"router_aux_loss\":" + auxLoss.toStdString();
    return line + "}";
}

std::string startLine(int resumedFrom = -1)
{
    json fields = {{"run_id", "moe"}, {"world_size", 1}, {"config", json::object()}};
    if (resumedFrom >= 0)
        fields["resumed_from_step"] = resumedFrom;
    return makeEvent(EventType::RunStart, 0, 1.0e9, fields).dump();
}

// The lines written to a file and folded as the Runs page folds them.
RunHistory foldFile(const std::vector<std::string>& lines)
{
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("events.jsonl")).toStdString();
    {
        std::ofstream out(path);
        for (const std::string& line : lines)
            out << line << '\n';
    }
    EventFileReader reader(path);
    RunHistory history;
    for (const tb::metrics::StreamItem& item : tb::test::pollAll(reader)) {
        if (item.event)
            history.apply(*item.event);
        else
            history.addUnreadableLine(item.error);
    }
    return history;
}

QString layers(int count, const QString& layer)
{
    QStringList all;
    for (int i = 0; i < count; ++i)
        all << layer;
    return "[" + all.join(',') + "]";
}

} // namespace

class TestExpertRouting : public QObject {
    Q_OBJECT

private slots:
    void busiestExpertAgainstTheEvenShare_data()
    {
        QTest::addColumn<QList<qint64>>("counts");
        QTest::addColumn<double>("ratio");
        QTest::addRow("even, 4 experts") << QList<qint64>{6, 6, 6, 6} << 1.0;
        QTest::addRow("even, 8 experts") << QList<qint64>(8, 12) << 1.0;
        // Every token to the same k = 2 experts: experts / k, the worst.
        QTest::addRow("collapsed onto 2 of 4") << QList<qint64>{32, 32, 0, 0} << 2.0;
        QTest::addRow("collapsed onto 2 of 8") << QList<qint64>{0, 32, 0, 0, 0, 32, 0, 0} << 4.0;
        QTest::addRow("collapsed onto 2 of 128") << [] {
            QList<qint64> c(128, 0);
            c[3] = c[77] = 10;
            return c;
        }() << 64.0;
        QTest::addRow("one expert at twice its share") << QList<qint64>{8, 4, 2, 2} << 2.0;
        QTest::addRow("nothing routed") << QList<qint64>{0, 0, 0, 0} << -1.0;
    }

    void busiestExpertAgainstTheEvenShare()
    {
        QFETCH(QList<qint64>, counts);
        QFETCH(double, ratio);
        QCOMPARE(busiestLoadRatio(std::vector<int64_t>(counts.begin(), counts.end())), ratio);
    }

    // Three steps of two layers: even, one layer collapsed, both collapsed.
    void figuresOfEachStepFromAFile()
    {
        const RunHistory history =
            foldFile({startLine(), stepLine(1, "[[16,16,16,16],[16,16,16,16]]", "2.0"),
                stepLine(2, "[[16,16,16,16],[32,32,0,0]]", "2.5"),
                stepLine(3, "[[0,64,0,0],[32,32,0,0]]", "3.75")});
        QVERIFY(history.messages().empty());
        QVERIFY(history.hasExpertRouting());
        const auto& points = history.routing();
        QCOMPARE(points.size(), size_t(3));
        QCOMPARE(points[0].step, 1);
        QCOMPARE(points[0].worstLoadRatio, 1.0);
        QCOMPARE(points[0].meanLoadRatio, 1.0);
        QCOMPARE(points[0].routerAuxLoss, 2.0);
        QCOMPARE(points[1].worstLoadRatio, 2.0);
        QCOMPARE(points[1].worstLayer, 1);
        QCOMPARE(points[1].meanLoadRatio, 1.5);
        QCOMPARE(points[1].routerAuxLoss, 2.5);
        // One expert with every token of layer 0 (k = 1 there): 4x its share.
        QCOMPARE(points[2].worstLoadRatio, 4.0);
        QCOMPARE(points[2].worstLayer, 0);
        QCOMPARE(points[2].meanLoadRatio, 3.0);
        QVERIFY(history.latestExpertLoads().has_value());
        QCOMPARE(history.latestExpertLoads()->step, 3);
        QCOMPARE(history.latestExpertLoads()->tokens,
            (std::vector<std::vector<int64_t>>{{0, 64, 0, 0}, {32, 32, 0, 0}}));
    }

    void aDenseRunHasNoRouting()
    {
        const RunHistory history = foldFile({startLine(), stepLine(1, {}), stepLine(2, {})});
        QCOMPARE(history.steps().size(), size_t(2));
        QVERIFY(!history.hasExpertRouting());
        QVERIFY(history.routing().empty());
        QVERIFY(!history.latestExpertLoads());
        QVERIFY(history.messages().empty());
    }

    // Step 2's field is malformed: a message names the step, the field and
    // what was expected; the step stays on the loss curve, its expert loads
    // are skipped, and steps 1 and 3 are read as usual.
    void malformedFieldsAreReportedAndSkipped_data()
    {
        QTest::addColumn<QString>("expertTokens");
        QTest::addColumn<QString>("auxLoss");
        QTest::addColumn<QString>("message");
        QTest::addColumn<bool>("loadsRead");
        const QString even = QStringLiteral("[[4,4,4,4],[4,4,4,4]]");
        QTest::addRow("a string")
            << "\"many\""
            << ""
            << "field 'expert_tokens': got \"many\", expected a list of 1 to 1024 layers" << false;
        QTest::addRow("null") << "null"
                              << ""
                              << "field 'expert_tokens': got null" << false;
        QTest::addRow("an object") << "{\"0\":[4,4]}"
                                   << ""
                                   << "field 'expert_tokens': got {\"0\":[4,4]}" << false;
        QTest::addRow("no layers") << "[]"
                                   << ""
                                   << "field 'expert_tokens': got [], expected a list" << false;
        QTest::addRow("one flat list")
            << "[4,4,4,4]"
            << ""
            << "field 'expert_tokens[0]': got 4, expected a list of 1 to 1024 token counts"
            << false;
        QTest::addRow("an empty layer")
            << "[[4,4],[]]"
            << ""
            << "field 'expert_tokens[1]': got [], expected a list" << false;
        QTest::addRow("ragged")
            << "[[4,4,4,4],[4,4,4]]"
            << ""
            << "field 'expert_tokens[1]': got 3 experts, expected 4 as in layer 0" << false;
        QTest::addRow("a negative count")
            << "[[4,4,4,4],[4,4,-1,4]]"
            << ""
            << "field 'expert_tokens[1][2]': got -1, expected a token count (an integer from 0)"
            << false;
        QTest::addRow("a fractional count")
            << "[[4,4,2.5,4]]"
            << ""
            << "field 'expert_tokens[0][2]': got 2.5, expected a token count" << false;
        QTest::addRow("a float count")
            << "[[4,4,4.0,4]]"
            << ""
            << "field 'expert_tokens[0][2]': got 4.0, expected a token count" << false;
        QTest::addRow("a count as text")
            << "[[4,\"4\",4,4]]"
            << ""
            << "field 'expert_tokens[0][1]': got \"4\", expected a token count" << false;
        QTest::addRow("a count past 2^53")
            << "[[4,9007199254740993,4,4]]"
            << ""
            << "field 'expert_tokens[0][1]': got 9007199254740993" << false;
        QTest::addRow("nothing routed") << "[[0,0,0,0]]"
                                        << ""
                                        << "field 'expert_tokens[0]': every count is 0" << false;
        QTest::addRow("1025 layers") << layers(1025, "[1,1]") << ""
                                     << "expected a list of 1 to 1024 layers" << false;
        QTest::addRow("1025 experts") << layers(1, layers(1025, "1")) << ""
                                      << "field 'expert_tokens[0]': got [1,1,1" << false;
        QTest::addRow("aux loss as text")
            << even << "\"2.0\""
            << "field 'router_aux_loss': got \"2.0\", expected a number from 0" << true;
        QTest::addRow("negative aux loss")
            << even << "-0.5"
            << "field 'router_aux_loss': got -0.5, expected a number from 0" << true;
    }

    void malformedFieldsAreReportedAndSkipped()
    {
        QFETCH(QString, expertTokens);
        QFETCH(QString, auxLoss);
        QFETCH(QString, message);
        QFETCH(bool, loadsRead);
        const QString even = QStringLiteral("[[4,4,4,4],[4,4,4,4]]");
        const RunHistory history = foldFile({startLine(), stepLine(1, even, "2.0"),
            stepLine(2, expertTokens, auxLoss), stepLine(3, even, "2.0")});
        QCOMPARE(history.steps().size(), size_t(3));
        QCOMPARE(history.messages().size(), size_t(1));
        const tb::metrics::RunMessage& report = history.messages().front();
        QCOMPARE(report.level, std::string("unreadable"));
        const QString text = QString::fromStdString(report.text);
        QVERIFY2(text.startsWith(QStringLiteral("step 2: ")) && text.contains(message),
            qPrintable(text));
        QVERIFY2(text.size() < 400, qPrintable(text)); // a value shown clipped, never whole

        std::vector<int64_t> steps;
        for (const tb::metrics::RoutingPoint& point : history.routing())
            steps.push_back(point.step);
        QCOMPARE(steps, (loadsRead ? std::vector<int64_t>{1, 2, 3} : std::vector<int64_t>{1, 3}));
        if (loadsRead) {
            QCOMPARE(history.routing()[1].worstLoadRatio, 1.0);
            QCOMPARE(history.routing()[1].routerAuxLoss, -1.0);
        }
        QCOMPARE(history.latestExpertLoads()->step, 3);
    }

    // Steps 1 to 4, then a resume from step 2's checkpoint that repeats 3
    // with another spread: the repeated point replaces the old one.
    void aResumeReplacesTheRepeatedSteps()
    {
        const QString even = QStringLiteral("[[8,8,8,8]]");
        const RunHistory history = foldFile({startLine(), stepLine(1, even), stepLine(2, even),
            stepLine(3, even), stepLine(4, even), startLine(2), stepLine(3, "[[32,0,0,0]]")});
        QCOMPARE(history.routing().size(), size_t(3));
        QCOMPARE(history.routing().back().step, 3);
        QCOMPARE(history.routing().back().worstLoadRatio, 4.0);
        QCOMPARE(history.latestExpertLoads()->step, 3);
        QCOMPARE(history.latestExpertLoads()->tokens.front().front(), 32);
        QCOMPARE(history.purges(), uint64_t(1));
    }
};

QTEST_GUILESS_MAIN(TestExpertRouting)
#include "test_expert_routing.moc"
