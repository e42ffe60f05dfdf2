#include "metrics/event.h"
#include "metrics/event_file_reader.h"
#include "metrics/event_stream_parser.h"
#include "metrics/event_writer.h"
#include "metrics/followed_run.h"
#include "metrics/run_control.h"
#include "metrics/run_history.h"
#include "metrics/step_record.h"

#include "event_specs.h"

#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <csignal>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace tb::metrics;
using namespace tb::test;
using nlohmann::json;

class TestMetrics : public QObject {
    Q_OBJECT

private slots:
    void parseRejects_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("mentions");
        QTest::addRow("not json") << "{\"schema\":1,\"type\""
                                  << "not valid JSON";
        // 100,000 levels in a 200 KB line: refused, never a stack overflow
        // in a later dump or copy.
        QTest::addRow("nested 100,000 deep")
            << R"({"schema":1,"type":"log","time":1,"rank":0,"message":)" + QString(100000, '[')
                + QString(100000, ']') + "}"
            << "not valid JSON: nested deeper than 64 levels";
        QTest::addRow("array") << "[1,2]"
                               << "expected a JSON object";
        QTest::addRow("no schema") << R"({"type":"log","time":1,"rank":0,"message":"x"})"
                                   << "'schema'";
        QTest::addRow("newer schema")
            << R"({"schema":99,"type":"log","time":1,"rank":0,"message":"x"})"
            << "understands 1 to 1";
        QTest::addRow("negative rank")
            << R"({"schema":1,"type":"log","time":1,"rank":-1,"message":"x"})"
            << "'rank'";
        QTest::addRow("step without loss")
            << R"({"schema":1,"type":"step","time":1,"rank":0,"step":3})"
            << "'loss' is missing";
        QTest::addRow("step with string loss")
            << R"({"schema":1,"type":"step","time":1,"rank":0,"step":3,"loss":"low"})"
            << "expected a number or null";
        QTest::addRow("run_start without config")
            << R"({"schema":1,"type":"run_start","time":1,"rank":0,"run_id":"r","world_size":2})"
            << "'config' is missing";
    }
    void parseRejects()
    {
        QFETCH(QString, line);
        QFETCH(QString, mentions);
        const auto result = parseEvent(line.toStdString());
        QVERIFY(!result.ok());
        QVERIFY2(QString::fromStdString(result.error().toString()).contains(mentions),
            result.error().toString().c_str());
    }

    void unknownTypeIsKeptNotRejected()
    {
        const auto result = parseEvent(R"({"schema":1,"type":"profile","time":2,"rank":1,"x":5})");
        QVERIFY(result.ok());
        QCOMPARE(result->type, EventType::Unknown);
        QCOMPARE(QString::fromStdString(result->typeName), "profile");
    }

    void historyFoldsEvents_data()
    {
        QTest::addColumn<QStringList>("events");
        QTest::addColumn<QList<qint64>>("steps");
        QTest::addColumn<QList<qint64>>("evalSteps");
        QTest::addColumn<QString>("status"); // empty: still running
        QTest::addColumn<int>("messages");
        QTest::newRow("fresh run")
            << QStringList{"start", "s1", "s2", "w", "e2", "c2", "s3", "end:completed"}
            << QList<qint64>{1, 2, 3} << QList<qint64>{2} << "completed" << 1;
        QTest::newRow("running") << QStringList{"start", "s1", "s2"} << QList<qint64>{1, 2}
                                 << QList<qint64>{} << "" << 0;
        // Killed after step 5, resumed from the checkpoint of step 4: step 5
        // is trained again and replaces the first one.
        QTest::newRow("resumed from an earlier checkpoint")
            << QStringList{"start", "s1", "s2", "s3", "s4", "e4", "c4", "s5", "e5", "start@4", "s5",
                   "s6"}
            << QList<qint64>{1, 2, 3, 4, 5, 6} << QList<qint64>{4} << "" << 0;
        QTest::newRow("stopped, then resumed: running again")
            << QStringList{"start", "s1", "s2", "c2", "end:stopped", "start@2", "s3"}
            << QList<qint64>{1, 2, 3} << QList<qint64>{} << "" << 0;
        QTest::newRow("steps going back without a run_start")
            << QStringList{"start", "s1", "s2", "s3", "s2"} << QList<qint64>{1, 2}
            << QList<qint64>{} << "" << 0;
        QTest::newRow("unknown type ignored")
            << QStringList{"start", "s1", "future", "end:failed"} << QList<qint64>{1}
            << QList<qint64>{} << "failed" << 0;
    }

    void historyFoldsEvents()
    {
        QFETCH(QStringList, events);
        QFETCH(QList<qint64>, steps);
        QFETCH(QList<qint64>, evalSteps);
        QFETCH(QString, status);
        QFETCH(int, messages);
        RunHistory history;
        for (const Event& event : eventsFrom(events))
            history.apply(event);
        QList<qint64> gotSteps, gotEvals;
        for (const StepRecord& record : history.steps())
            gotSteps.append(record.step);
        for (const EvalPoint& point : history.evals())
            gotEvals.append(point.step);
        QCOMPARE(gotSteps, steps);
        QCOMPARE(gotEvals, evalSteps);
        QCOMPARE(QString::fromStdString(history.end() ? history.end()->status : ""), status);
        QCOMPARE(int(history.messages().size()), messages);
        QVERIFY(history.start().has_value());
        QCOMPARE(history.start()->modelName, std::string("stories260K"));
        QCOMPARE(history.start()->worldSize, 2);
        QCOMPARE(history.start()->totalSteps, int64_t{8});
        QCOMPARE(history.start()->sharding, std::string("zero3"));
    }

    // Integer fields are read by their JSON type: a float (1e300 is
    // undefined behaviour to cast) or an out-of-range world size is as
    // absent, never a wrapped or cast number.
    void historyReadsIntegersByType()
    {
        RunHistory history;
        for (Event event : eventsFrom({"start"})) {
            event.body["pid"] = 1e300;
            event.body["world_size"] = 1e12;
            event.body["total_steps"] = 2.5;
            history.apply(event);
        }
        QVERIFY(history.start().has_value());
        QVERIFY(history.start()->pid <= 0);
        QCOMPARE(history.start()->worldSize, 1);
        QCOMPARE(history.start()->totalSteps, int64_t{-1});
        // A step's integers too (found by fuzz_event_consumers: 2.37e22 cast to int64_t).
        Event step = eventsFrom({"s1"}).front();
        step.body["mem_peak_bytes"] = 2.37356e22;
        step.body["tokens"] = 7.5;
        QCOMPARE(StepRecord::fromEvent(step).memPeakBytes, int64_t{-1});
        QCOMPARE(StepRecord::fromEvent(step).tokens, int64_t{-1});
        QCOMPARE(StepRecord::fromEvent(step).step, int64_t{1});
    }

    void stoppableTrainer_data()
    {
        QTest::addColumn<QStringList>("events");
        QTest::addColumn<QString>("pid"); // run_start's pid, empty: none
        QTest::addColumn<QString>("host"); // the caller's host
        QTest::addColumn<QString>("commandLine"); // of that pid there
        QTest::addColumn<QString>("expected"); // empty: stoppable
        const QString trainer = "/usr/bin/tunebench-trainer train run.yaml";
        QTest::newRow("running here") << QStringList{"start", "s1"} << "4242"
                                      << "node0" << trainer << "";
        QTest::newRow("nothing read") << QStringList{} << "4242"
                                      << "node0" << trainer << "no run_start";
        QTest::newRow("ended") << QStringList{"start", "s1", "end:completed"} << "4242"
                               << "node0" << trainer << "the run has ended (completed)";
        QTest::newRow("no pid") << QStringList{"start"} << ""
                                << "node0" << trainer << "names no pid";
        QTest::newRow("another host") << QStringList{"start"} << "4242"
                                      << "laptop" << trainer << "it runs on node0, not on laptop";
        QTest::newRow("process gone") << QStringList{"start"} << "4242"
                                      << "node0"
                                      << ""
                                      << "process 4242 on node0 is gone";
        QTest::newRow("pid reused") << QStringList{"start"} << "4242"
                                    << "node0"
                                    << "/usr/bin/vim notes"
                                    << "is no longer the trainer (/usr/bin/vim notes)";
    }

    void stoppableTrainer()
    {
        QFETCH(QStringList, events);
        QFETCH(QString, pid);
        QFETCH(QString, host);
        QFETCH(QString, commandLine);
        QFETCH(QString, expected);
        RunHistory history;
        for (Event event : eventsFrom(events)) {
            if (event.type == EventType::RunStart) {
                event.body["host"] = "node0";
                if (!pid.isEmpty())
                    event.body["pid"] = pid.toLongLong();
            }
            history.apply(event);
        }
        long long asked = -1;
        const auto result =
            tb::metrics::stoppableTrainer(history, host.toStdString(), [&](long long candidate) {
                asked = candidate;
                return commandLine.toStdString();
            });
        if (expected.isEmpty()) {
            QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
            QCOMPARE(*result, 4242LL);
            QCOMPARE(asked, 4242LL);
        } else {
            QVERIFY(!result.ok());
            QVERIFY2(QString::fromStdString(result.error().message).contains(expected),
                result.error().message.c_str());
        }
    }

    void stepRecordRoundTrips()
    {
        StepRecord record;
        record.step = 12;
        record.loss = 2.5;
        record.learningRate = 3e-4;
        record.tokens = 4096;
        record.tokensPerSecond = 1234.5;
        record.memPeakBytes = 1LL << 33;
        const json event = makeEvent(EventType::Step, 0, 10.0, record.toFields());
        QVERIFY(!event.contains("grad_norm")); // unknown figures stay out
        const auto parsed = parseEvent(event.dump());
        QVERIFY(parsed.ok());
        const StepRecord back = StepRecord::fromEvent(*parsed);
        QCOMPARE(back.step, int64_t{12});
        QCOMPARE(back.loss, 2.5);
        QCOMPARE(back.learningRate, 3e-4);
        QCOMPARE(back.tokens, int64_t{4096});
        QCOMPARE(back.memPeakBytes, int64_t{1} << 33);
        QCOMPARE(back.gradNorm, -1.0);
    }

    void divergedLossIsNull()
    {
        StepRecord record;
        record.step = 1;
        record.loss = std::nan("");
        const json fields = record.toFields();
        QVERIFY(fields["loss"].is_null());
        QVERIFY(parseEvent(makeEvent(EventType::Step, 0, 1, fields).dump()).ok());
    }

    void writerWritesWholeLines()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        auto writer = EventWriter::open(path, 3);
        QVERIFY(writer.ok());
        QVERIFY(writer.value()->write(EventType::Log, {{"message", "hello\nworld"}}).ok());
        QVERIFY(writer.value()->write(EventType::Step, StepRecord{}.toFields()).ok());
        EventFileReader reader(path);
        const auto items = pollAll(reader);
        QCOMPARE(items.size(), size_t{2});
        QVERIFY(items[0].event);
        QCOMPARE(items[0].event->rank, 3);
        QCOMPARE(items[0].event->body["message"].get<std::string>(), std::string("hello\nworld"));
        QCOMPARE(items[1].event->type, EventType::Step);
    }

    // The monitor follows a run on a worker thread while the trainer appends
    // (ui/runs/run_follower): a follower on one thread, a writer on another,
    // meeting only in the file. Every step written is read once, in order,
    // whatever the follower caught mid-line. The ThreadSanitizer preset runs it.
    void followerReadsWhileWriterAppends()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        constexpr int kSteps = 400;
        std::atomic<bool> written{false};
        std::thread writerThread([&] {
            auto writer = EventWriter::open(path, 0);
            if (!writer.ok())
                qFatal("%s", writer.error().message.c_str());
            for (int step = 1; step <= kSteps; ++step) {
                StepRecord record;
                record.step = step;
                record.loss = 1.0 / step;
                if (!writer.value()->write(EventType::Step, record.toFields()).ok())
                    qFatal("write failed at step %d", step);
            }
            written.store(true);
        });
        std::vector<int64_t> seen;
        std::thread followerThread([&] {
            FollowedRun run(path);
            for (;;) {
                const bool last = written.load(); // one more poll after the writer's end
                if (!run.poll().ok())
                    qFatal("poll failed");
                if (last)
                    break;
            }
            for (const StepRecord& record : run.history().steps())
                seen.push_back(record.step);
        });
        writerThread.join();
        followerThread.join();
        QCOMPARE(int(seen.size()), kSteps);
        for (int step = 1; step <= kSteps; ++step)
            QCOMPARE(seen[std::size_t(step - 1)], int64_t(step));
    }

    void readerWaitsForPartialLine()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        const std::string line = stepLine(1, 3.0);
        appendRaw(path, line.substr(0, 20));
        EventFileReader reader(path);
        QCOMPARE(pollAll(reader).size(), size_t{0});
        QCOMPARE(reader.offset(), uint64_t{0});
        appendRaw(path, line.substr(20) + "\n");
        const auto items = pollAll(reader);
        QCOMPARE(items.size(), size_t{1});
        QVERIFY(items[0].event);
        QCOMPARE(reader.offset(), uint64_t(line.size() + 1));
    }

    // A long file read in bounded batches gives the same lines as one read.
    void readerBatchesLongFile()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        std::string lines;
        for (int step = 1; step <= 3000; ++step)
            lines += stepLine(step, 1.0) + "\n";
        appendRaw(path, lines);
        EventFileReader whole(path);
        const size_t expected = pollAll(whole).size();
        QCOMPARE(expected, size_t{3000});
        QVERIFY(!whole.moreAvailable());

        EventFileReader batched(path);
        std::vector<uint64_t> lineNumbers;
        int batches = 0;
        do {
            auto items = batched.poll(64 * 1024);
            QVERIFY(items.ok());
            for (const StreamItem& item : *items) {
                QVERIFY(item.event.has_value());
                lineNumbers.push_back(item.lineNumber);
            }
            ++batches;
        } while (batched.moreAvailable());
        QCOMPARE(lineNumbers.size(), expected);
        for (size_t index = 0; index < lineNumbers.size(); ++index)
            QCOMPARE(lineNumbers[index], uint64_t(index + 1));
        QCOMPARE(batches, int((lines.size() + 65535) / 65536));
    }

    void readerResumesFromOffset()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        appendRaw(path, stepLine(1, 3.0) + "\n" + stepLine(2, 2.0) + "\n");
        EventFileReader first(path);
        QCOMPARE(pollAll(first).size(), size_t{2});
        appendRaw(path, stepLine(3, 1.0) + "\n");

        // A reader that reconnects with the saved position sees only step 3.
        EventFileReader resumed(path, first.offset(), first.nextLineNumber());
        const auto items = pollAll(resumed);
        QCOMPARE(items.size(), size_t{1});
        QCOMPARE(items[0].lineNumber, uint64_t{3});
        QCOMPARE(items[0].event->body["step"].get<int>(), 3);
    }

    void parserFedByteByByteMatchesWholeFeed()
    {
        const std::string stream = stepLine(1, 3.0) + "\n\n" + stepLine(2, 2.0) + "\nnot json\n";
        EventStreamParser whole;
        const auto expected = whole.feed(stream);
        EventStreamParser bytewise;
        std::vector<StreamItem> got;
        for (char c : stream) {
            for (auto& item : bytewise.feed(std::string_view(&c, 1)))
                got.push_back(std::move(item));
        }
        QCOMPARE(got.size(), expected.size());
        QCOMPARE(got.size(), size_t{3}); // the blank line is no event and no error
        for (size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].lineNumber, expected[i].lineNumber);
            QCOMPARE(got[i].byteOffset, expected[i].byteOffset);
            QCOMPARE(bool(got[i].event), bool(expected[i].event));
        }
        QCOMPARE(got[2].lineNumber, uint64_t{4});
        QCOMPARE(bytewise.offset(), uint64_t(stream.size()));
    }

    void overlongLineIsBounded()
    {
        EventStreamParser parser;
        const std::string junk(EventStreamParser::kMaxLineBytes + 10, 'x');
        auto items = parser.feed(junk);
        QCOMPARE(items.size(), size_t{1});
        QVERIFY(QString::fromStdString(items[0].error).contains("longer than"));
        QVERIFY(parser.pendingBytes() == 0);
        items = parser.feed("\n" + stepLine(5, 1.0) + "\n");
        QCOMPARE(items.size(), size_t{1});
        QVERIFY(items[0].event);
        QCOMPARE(items[0].lineNumber, uint64_t{2});
        QCOMPARE(items[0].byteOffset, uint64_t(junk.size() + 1));
    }

    // A writer process killed with SIGKILL while writing as fast as it can:
    // every line the reader gets is whole and valid.
    void writerKilledWhileWriting()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        const pid_t child = ::fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            auto writer = EventWriter::open(path, 0);
            StepRecord record;
            for (int64_t step = 0;; ++step) {
                record.step = step;
                record.loss = 1.0 / double(step + 1);
                json fields = record.toFields();
                fields["padding"] = std::string(static_cast<size_t>(step % 997), 'p');
                (void)writer.value()->write(EventType::Step, fields);
            }
        }
        // Killed mid-stream: once it has written a good many lines.
        QTRY_VERIFY_WITH_TIMEOUT(
            QFileInfo(QString::fromStdString(path)).size() > 256 * 1024, 30000);
        ::kill(child, SIGKILL);
        int status = 0;
        ::waitpid(child, &status, 0);

        EventFileReader reader(path);
        const auto items = pollAll(reader);
        QVERIFY(items.size() > 10);
        for (const StreamItem& item : items)
            QVERIFY2(item.event, item.error.c_str());
        for (size_t i = 0; i < items.size(); ++i)
            QCOMPARE(items[i].event->body["step"].get<size_t>(), i);
    }

    // A line torn by a crash mid-write: the next writer closes it, the reader
    // reports that one line and carries on.
    void tornLineClosedByNextWriter()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        appendRaw(path, stepLine(1, 3.0) + "\n" + stepLine(2, 2.0).substr(0, 25));
        auto writer = EventWriter::open(path, 0);
        QVERIFY(writer.ok());
        QVERIFY(writer.value()->write(EventType::RunEnd, {{"status", "completed"}}).ok());
        EventFileReader reader(path);
        const auto items = pollAll(reader);
        QCOMPARE(items.size(), size_t{3});
        QVERIFY(items[0].event);
        QVERIFY(!items[1].event);
        QCOMPARE(items[1].lineNumber, uint64_t{2});
        QVERIFY(items[2].event);
        QCOMPARE(items[2].event->type, EventType::RunEnd);
    }

    void shrunkFileIsAnError()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("events.jsonl").toStdString();
        appendRaw(path, stepLine(1, 3.0) + "\n");
        EventFileReader reader(path);
        QCOMPARE(pollAll(reader).size(), size_t{1});
        std::ofstream(path, std::ios::trunc) << "";
        const auto result = reader.poll();
        QVERIFY(!result.ok());
        QVERIFY(QString::fromStdString(result.error().message).contains("shrank"));
    }

    void missingFileIsNotYetAnError()
    {
        EventFileReader reader("/nonexistent-dir/events.jsonl");
        const auto result = reader.poll();
        QVERIFY(result.ok());
        QVERIFY(result->empty());
    }
};

QTEST_GUILESS_MAIN(TestMetrics)
#include "test_metrics.moc"
