// tunebench-cli monitor on every event the trainer can write, and on
// fields of the wrong type: each is printed, or named as unreadable with its
// file, line and field, and the monitor goes on to the run's end; never an
// internal error.
#include "../support/cli_outcome.h"
#include "../support/test_paths.h"
#include "metrics/event.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using nlohmann::json;
using tb::metrics::EventType;
using tb::metrics::makeEvent;

class TestCliMonitor : public QObject {
    Q_OBJECT

private slots:
    void printsWhatTheRunWrote_data()
    {
        QTest::addColumn<QByteArray>("line");
        QTest::addColumn<QString>("printed");
        const auto event = [](EventType type, const json& fields) {
            return QByteArray::fromStdString(makeEvent(type, 0, 1.0e9 + 1, fields).dump());
        };
        // The trainer writes a loss that was not finite as null.
        QTest::newRow("step, loss null")
            << event(EventType::Step, {{"step", 1}, {"loss", nullptr}}) << "step 1/3  loss nan";
        QTest::newRow("eval, loss null") << event(EventType::Eval, {{"step", 2}, {"loss", nullptr}})
                                         << "eval       step 2  validation loss nan";
        QTest::newRow("eval, loss a string")
            << event(EventType::Eval, {{"step", 2}, {"loss", "low"}})
            << "events.jsonl:2: eval event: field 'loss': got \"low\", expected a number or null";
        QTest::newRow("checkpoint, step a string")
            << event(EventType::Checkpoint, {{"step", "ten"}, {"path", "checkpoints/x"}})
            << "events.jsonl:2: checkpoint event: field 'step': got \"ten\", expected an integer";
        // A hostile run's message: an OSC 52 sequence (sets the clipboard)
        // and a newline forging a launch's node line. One escaped line.
        QTest::newRow("warning, escape sequence and a forged line")
            << event(EventType::Warning,
                   {{"message", "\x1b]52;c;ZXZpbA==\x07\nnode 1 x exited exit status 0"}})
            << "warning    \\x1b]52;c;ZXZpbA==\\x07\\x0anode 1 x exited exit status 0";
        QTest::newRow("warning, message a number")
            << event(EventType::Warning, {{"message", 7}})
            << "events.jsonl:2: warning event: field 'message': got 7, expected a string";
    }

    void printsWhatTheRunWrote()
    {
        QFETCH(QByteArray, line);
        QFETCH(QString, printed);
        QTemporaryDir dir;
        QFile file(dir.filePath(QStringLiteral("events.jsonl")));
        QVERIFY(file.open(QIODevice::WriteOnly));
        const json start = {{"run_id", "odd"}, {"world_size", 1}, {"config", json::object()},
            {"model", {{"name", "m"}}}, {"total_steps", 3}};
        file.write(QByteArray::fromStdString(makeEvent(EventType::RunStart, 0, 1.0e9, start).dump())
            + "\n");
        file.write(line + "\n");
        file.write(QByteArray::fromStdString(makeEvent(EventType::RunEnd, 0, 1.0e9 + 2,
                       {{"status", "completed"},
                           {"steps", 1}}).dump())
            + "\n");
        file.close();
        const tb::test::CliOutcome outcome = tb::test::runProgram(
            QString::fromUtf8(tb::test::cliProgram()), {"monitor", dir.path()}, 20000);
        QVERIFY2(!outcome.err.contains(QStringLiteral("internal error")), qPrintable(outcome.err));
        QVERIFY2(outcome.out.contains(printed), qPrintable(outcome.out + outcome.err));
        QVERIFY2(
            outcome.out.contains(QStringLiteral("run_end    completed")), qPrintable(outcome.out));
        QCOMPARE(outcome.exitCode, 0);
    }
};

QTEST_GUILESS_MAIN(TestCliMonitor)
#include "test_cli_monitor.moc"
