// tunebench-cli runs, compare and scaling as a user meets them: the real
// binary on run folders written here, bad input, and a real scaling probe
// of stories260K.
#include "../support/endless_run.h"
#include "metrics/event.h"
#include "metrics/run_history.h"
#include "metrics/step_record.h"

#include "../support/cli_outcome.h"
#include "../support/test_paths.h"
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using nlohmann::json;
using tb::metrics::EventType;
using tb::metrics::makeEvent;

namespace {

using Outcome = tb::test::CliOutcome;

Outcome runCli(const QStringList& arguments, int timeoutMs = 30000)
{
    return tb::test::runProgram(QString::fromUtf8(tb::test::cliProgram()), arguments, timeoutMs);
}

// A run at `ranks` ranks whose steps after the first carry `tokens` tokens
// in 0.5 s each; with a prediction of `predicted` tokens/s when positive.
QString writeRun(
    const QString& root, const QString& name, int ranks, int64_t tokens, double predicted)
{
    const QString dir = root + QLatin1Char('/') + name;
    QDir().mkpath(dir);
    QFile file(dir + QStringLiteral("/events.jsonl"));
    if (!file.open(QIODevice::WriteOnly))
        qFatal("cannot write %s", qPrintable(file.fileName()));
    json start = {{"run_id", name.toStdString()}, {"world_size", ranks},
        {"config", {{"method", "lora"}}}, {"model", {{"name", "stories260K"}}}, {"total_steps", 3}};
    if (predicted > 0)
        start["prediction"] =
            tb::metrics::RunPrediction{"CPU (test)", 200 << 20, predicted, 0.4}.toJson();
    file.write(
        QByteArray::fromStdString(makeEvent(EventType::RunStart, 0, 1.0e9, start).dump() + "\n"));
    for (int step = 1; step <= 3; ++step) {
        tb::metrics::StepRecord record;
        record.step = step;
        record.loss = 3.0 - 0.25 * step;
        record.tokens = tokens;
        record.stepSeconds = 0.5;
        record.tokensPerSecond = 2.0 * double(tokens);
        record.memPeakBytes = 100 << 20;
        file.write(QByteArray::fromStdString(
            makeEvent(EventType::Step, 0, 1.0e9 + step, record.toFields()).dump() + "\n"));
    }
    file.write(QByteArray::fromStdString(
        makeEvent(EventType::RunEnd, 0, 1.0e9 + 4, {{"status", "completed"}, {"steps", 3}}).dump()
        + "\n"));
    return dir;
}

} // namespace

class TestCliCompare : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_one = writeRun(m_dir.path() + "/series", "np1", 1, 1000, 2500);
        m_two = writeRun(m_dir.path() + "/series", "np2", 2, 1600, 0);
    }

    void runsListsEveryRunFolder()
    {
        const Outcome outcome = runCli({QStringLiteral("runs"), m_dir.path()});
        QCOMPARE(outcome.exitCode, 0);
        const QStringList lines = outcome.out.split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 3); // the header and two runs
        QVERIFY2(lines[1].contains(QStringLiteral("np1"))
                && lines[1].contains(QStringLiteral("completed"))
                && lines[1].contains(QStringLiteral("2000"))
                && lines[1].contains(QStringLiteral("2.2500")),
            qPrintable(outcome.out));
        QVERIFY2(
            lines[2].contains(QStringLiteral("np2")) && lines[2].contains(QStringLiteral("3200")),
            qPrintable(outcome.out));
    }

    void compareGivesEfficiencyAndRatios()
    {
        const Outcome outcome = runCli({QStringLiteral("compare"), m_one, m_two});
        QCOMPARE(outcome.exitCode, 0);
        // 2 ranks: 3200 tokens/s, 1600 a rank against 2000: 80 %.
        QVERIFY2(outcome.out.contains(QStringLiteral("80.0 %")), qPrintable(outcome.out));
        QVERIFY2(outcome.out.contains(QStringLiteral("100.0 %")), qPrintable(outcome.out));
        // np1 predicted 2500 tokens/s, measured 2000: 0.80x; 0.5 s against 0.4 s: 1.25x.
        QVERIFY2(outcome.out.contains(QStringLiteral("0.80x"))
                && outcome.out.contains(QStringLiteral("1.25x")),
            qPrintable(outcome.out));

        const Outcome asJson =
            runCli({QStringLiteral("compare"), m_one, m_two, QStringLiteral("--json")});
        QCOMPARE(asJson.exitCode, 0);
        const QJsonObject root = QJsonDocument::fromJson(asJson.out.toUtf8()).object();
        const QJsonArray scaling = root.value("scaling").toArray();
        QCOMPARE(scaling.size(), 2);
        QCOMPARE(scaling[1].toObject().value("efficiency").toDouble(), 0.8);
        QCOMPARE(root.value("runs")
                     .toArray()[0]
                     .toObject()
                     .value("prediction")
                     .toObject()
                     .value("tokens_per_second")
                     .toDouble(),
            2500.0);
    }

    void badInputExitsTwo_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("mentions");
        QTest::addRow("runs: not a folder")
            << QStringList{"runs", "/nonexistent/runs"} << "/nonexistent/runs: not a folder";
        QTest::addRow("compare: nothing")
            << QStringList{"compare"} << "expected one or more run folders";
        QTest::addRow("compare: not a run")
            << QStringList{"compare", "/tmp"} << "/tmp: not a run folder (no events.jsonl)";
        QTest::addRow("scaling: bad count") << QStringList{"scaling", "x.yaml", "--nproc", "1,two"}
                                            << "'two' in '1,two' is not a rank count";
        QTest::addRow("scaling: too few steps")
            << QStringList{"scaling", "x.yaml", "--steps", "2"} << "--steps";
        QTest::addRow("scaling: missing recipe")
            << QStringList{"scaling", "/nonexistent/run.yaml"} << "/nonexistent/run.yaml";
    }
    void badInputExitsTwo()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, mentions);
        const Outcome outcome = runCli(arguments);
        QCOMPARE(outcome.exitCode, 2);
        QVERIFY2(outcome.err.contains(mentions), qPrintable(outcome.err));
    }

    // The LoRA recipe of stories260K at 1 and 2 ranks for 3 steps each.
    void realScalingProbe()
    {
        if (const QString why = tb::test::whyNoEndlessRun(); !why.isEmpty())
            TB_SKIP(why);
        const QString config = m_dir.filePath(QStringLiteral("probe.yaml"));
        QVERIFY(tb::test::writeEndlessRunConfig(config, m_dir.filePath(QStringLiteral("unused"))));
        const QString out = m_dir.filePath(QStringLiteral("probe"));
        const Outcome outcome = runCli(
            {QStringLiteral("scaling"), config, QStringLiteral("--nproc"), QStringLiteral("1,2"),
                QStringLiteral("--steps"), QStringLiteral("3"), QStringLiteral("--out"), out},
            300000);
        QVERIFY2(outcome.exitCode == 0, qPrintable(outcome.out + outcome.err));
        QVERIFY2(outcome.out.contains(
                     QStringLiteral("np 1: 3 steps in ") + out + QStringLiteral("/np1 ... done")),
            qPrintable(outcome.out));
        QVERIFY2(outcome.out.contains(
                     QStringLiteral("np 2: 3 steps in ") + out + QStringLiteral("/np2 ... done")),
            qPrintable(outcome.out));
        QVERIFY2(outcome.out.contains(QStringLiteral("100.0 %")), qPrintable(outcome.out));
        for (const QString& size : {QStringLiteral("np1"), QStringLiteral("np2")}) {
            QVERIFY(QFile::exists(out + "/" + size + "/run.yaml"));
            QVERIFY(QFile::exists(out + "/" + size + "/launch.log"));
        }
        const Outcome listed = runCli({QStringLiteral("runs"), out});
        QCOMPARE(listed.exitCode, 0);
        QCOMPARE(listed.out.count(QStringLiteral("completed")), 2);
        QVERIFY2(listed.out.contains(QStringLiteral("3/3")), qPrintable(listed.out));
        qInfo("%s", qPrintable(outcome.out));
    }

private:
    QTemporaryDir m_dir;
    QString m_one;
    QString m_two;
};

QTEST_MAIN(TestCliCompare)
#include "test_cli_compare.moc"
