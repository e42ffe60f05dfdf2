// What a reader of events keeps is bounded however much a file holds (review
// M5): a poll reads one batch by default, a rejected line's reason is cut, and
// a run's history keeps the latest messages, each cut, counting the rest.
#include "../support/deep_json.h"
#include "common/text.h"
#include "metrics/event.h"
#include "metrics/event_file_reader.h"
#include "metrics/event_stream_parser.h"
#include "metrics/run_history.h"

#include "event_specs.h"

#include <QTemporaryDir>
#include <QTest>

using namespace tb::metrics;
using namespace tb::test;

namespace {

Event logEvent(const std::string& message)
{
    return parseEvent(makeEvent(EventType::Warning, 0, 1.0e9, {{"message", message}}).dump())
        .value();
}

} // namespace

class TestEventLimits : public QObject {
    Q_OBJECT

private slots:
    void pollReadsOneBatchByDefault()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        const std::string line = stepLine(1, 1.0) + "\n";
        std::string bytes;
        while (bytes.size() < 3 * EventFileReader::kBytesPerBatch)
            bytes += line;
        appendRaw(path, bytes);
        EventFileReader reader(path);
        const auto first = reader.poll();
        QVERIFY(first.ok());
        QVERIFY(reader.moreAvailable());
        QVERIFY(reader.offset() <= EventFileReader::kBytesPerBatch + 65536);
        QVERIFY(first->size() * line.size() >= EventFileReader::kBytesPerBatch - line.size());
        QCOMPARE(first->size() + pollAll(reader).size(), bytes.size() / line.size());
    }

    // An unterminated string: nlohmann's error quotes the whole token.
    void aRejectedLinesReasonIsCut()
    {
        EventStreamParser parser;
        const std::vector<StreamItem> items = parser.feed('"' + std::string(200000, 'a') + "\n");
        QCOMPARE(items.size(), size_t{1});
        QVERIFY(!items[0].event);
        QVERIFY2(items[0].error.size() < EventStreamParser::kMaxErrorBytes + 40,
            items[0].error.substr(0, 200).c_str());
        QVERIFY2(items[0].error.ends_with(" more bytes)"), items[0].error.c_str());
    }

    // A line that is not JSON, or one nested 200,000 deep (review M1, issue
    // 24), in the middle of a file is one malformed line with its file and
    // line number, and the next line is read.
    void aMalformedLineIsReportedAndSkipped_data()
    {
        QTest::addColumn<QByteArray>("line");
        QTest::addColumn<QString>("reason");
        QTest::addRow("not JSON") << QByteArray("{oops") << "parse error";
        QTest::addRow("an array 200,000 deep") << QByteArray::fromStdString(
            tb::test::deepJsonArray()) << "nested deeper than 64 levels";
        QTest::addRow("a log event's field 200,000 deep") << QByteArray::fromStdString(
            R"({"schema":1,"type":"log","time":1,"rank":0,"message":"x","z":)"
            + tb::test::deepJsonObject() + "}") << "nested deeper than 64 levels";
    }
    void aMalformedLineIsReportedAndSkipped()
    {
        QFETCH(QByteArray, line);
        QFETCH(QString, reason);
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        appendRaw(
            path, stepLine(1, 3.0) + "\n" + line.toStdString() + "\n" + stepLine(2, 2.0) + "\n");
        EventFileReader reader(path);
        const auto items = pollAll(reader);
        QCOMPARE(items.size(), size_t{3});
        QVERIFY(items[0].event);
        QVERIFY(!items[1].event);
        QCOMPARE(items[1].lineNumber, uint64_t{2});
        QVERIFY2(items[1].error.starts_with(path + ":2: "), items[1].error.c_str());
        QVERIFY2(
            items[1].error.find(reason.toStdString()) != std::string::npos, items[1].error.c_str());
        QVERIFY(items[2].event);
        QCOMPARE(items[2].event->body["step"].get<int>(), 2);
    }

    void historyKeepsTheLatestMessagesEachCut()
    {
        RunHistory history;
        const size_t total = RunHistory::kMaxMessages + 250;
        for (size_t i = 0; i < total; ++i) {
            if (i % 2)
                history.addUnreadableLine("line " + std::to_string(i));
            else
                history.apply(logEvent("message " + std::to_string(i)));
        }
        QCOMPARE(history.messages().size(), RunHistory::kMaxMessages);
        QCOMPARE(history.droppedMessages(), uint64_t(250));
        QCOMPARE(history.messages().front().text, std::string("message 250"));
        QCOMPARE(history.messages().back().text, "line " + std::to_string(total - 1));
        QCOMPARE(history.droppedMessagesText(),
            std::string("... and 250 earlier message(s) not kept (the latest 1000 are)"));

        history.apply(logEvent(std::string(RunHistory::kMaxMessageBytes * 100, 'x')));
        const std::string& cut = history.messages().back().text;
        QVERIFY(cut.starts_with(std::string(RunHistory::kMaxMessageBytes, 'x') + "... ("));
        QVERIFY(cut.size() < RunHistory::kMaxMessageBytes + 40);
        QCOMPARE(RunHistory{}.droppedMessagesText(), std::string());
    }

    void clipTextNeverSplitsACharacter_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("limit");
        QTest::addColumn<QString>("expected");
        QTest::newRow("short") << "abc" << 3 << "abc";
        QTest::newRow("cut") << "abcdef" << 2 << "ab... (4 more bytes)";
        QTest::newRow("inside a two-byte character")
            << QString::fromUtf8("a\xc3\xa9z") << 2 << "a... (3 more bytes)";
        QTest::newRow("after it") << QString::fromUtf8("a\xc3\xa9z") << 3
                                  << QString::fromUtf8("a\xc3\xa9... (1 more bytes)");
        QTest::newRow("nothing") << "abc" << 0 << "... (3 more bytes)";
    }

    void clipTextNeverSplitsACharacter()
    {
        QFETCH(QString, text);
        QFETCH(int, limit);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(tb::common::clipText(text.toStdString(), size_t(limit))),
            expected);
    }
};

QTEST_GUILESS_MAIN(TestEventLimits)
#include "test_event_limits.moc"
