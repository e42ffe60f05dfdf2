// A DPO run's figures from its step events (the `dpo` object; docs/EVENTS.md):
// read by type, null as not finite, a wrong type reported and skipped, and
// folded beside RunHistory so that a resumed run's repeated steps replace
// the ones before.
#include "metrics/event.h"
#include "metrics/preference_steps.h"
#include "metrics/run_history.h"
#include "metrics/step_record.h"

#include <QtTest>

#include <cmath>

using nlohmann::json;
using tb::metrics::EventType;
using tb::metrics::makeEvent;
using tb::metrics::PreferenceHistory;
using tb::metrics::PreferencePoint;
using tb::metrics::RunHistory;

namespace {

// A step as the trainer writes it, with `dpo` spliced in as JSON text
// (empty: left out), so a malformed value reaches the parser as written.
std::string stepLine(int step, const QString& dpo)
{
    tb::metrics::StepRecord record;
    record.step = step;
    record.loss = 0.69;
    std::string line = makeEvent(EventType::Step, 0, 1.0e9 + step, record.toFields()).dump();
    line.pop_back();
    if (!dpo.isEmpty())
        line += ",\"dpo\":" + dpo.toStdString();
    return line + "}";
}

std::string startLine(int resumedFrom = -1)
{
    json fields = {{"run_id", "dpo"}, {"world_size", 1}, {"config", json::object()}};
    if (resumedFrom >= 0)
        fields["resumed_from_step"] = resumedFrom;
    return makeEvent(EventType::RunStart, 0, 1.0e9, fields).dump();
}

// Every figure of a point in kPreferenceFields' order.
QList<double> figures(const PreferencePoint& point)
{
    QList<double> values;
    for (const auto& field : tb::metrics::kPreferenceFields)
        values << point.*field.member;
    return values;
}

bool sameFigure(double a, double b)
{
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

const QString kFull = QStringLiteral(
    R"({"rewards_chosen":0.25,"rewards_rejected":-0.5,"rewards_margin":0.75,"rewards_accuracy":0.5,)"
    R"("logps_chosen":-40.5,"logps_rejected":-61.0,"ref_logps_chosen":-43.0,"ref_logps_rejected":-56.0})");

// The folds RunView makes, problems into the run's messages.
struct Folded {
    RunHistory history;
    PreferenceHistory preference;

    void add(const std::string& line)
    {
        const auto event = tb::metrics::parseEvent(line);
        QVERIFY2(event, line.c_str());
        history.apply(*event);
        for (const std::string& problem : preference.apply(*event, history))
            history.addUnreadableLine(problem);
    }
};

} // namespace

class TestPreferenceSteps : public QObject {
    Q_OBJECT

private slots:
    void readsTheDpoObject_data()
    {
        const double nan = tb::metrics::kNotFinite;
        QTest::addColumn<QString>("dpo"); // empty: no dpo object
        QTest::addColumn<bool>("hasPoint");
        QTest::addColumn<QList<double>>("expected");
        QTest::addColumn<QStringList>("problems"); // what each problem names
        QTest::addRow("present") << kFull << true
                                 << QList<double>{0.25, -0.5, 0.75, 0.5, -40.5, -61.0, -43.0, -56.0}
                                 << QStringList();
        QTest::addRow("absent: a supervised step")
            << QString() << false << QList<double>() << QStringList();
        QTest::addRow("null figures are not finite")
            << QStringLiteral(
                   R"({"rewards_chosen":null,"rewards_rejected":-0.5,"rewards_margin":null,)"
                   R"("rewards_accuracy":1,"logps_chosen":null,"logps_rejected":-61.0,)"
                   R"("ref_logps_chosen":-43.0,"ref_logps_rejected":null})")
            << true << QList<double>{nan, -0.5, nan, 1.0, nan, -61.0, -43.0, nan} << QStringList();
        QTest::addRow("a figure left out is not finite")
            << QStringLiteral(R"({"rewards_margin":0.75})") << true
            << QList<double>{nan, nan, 0.75, nan, nan, nan, nan, nan} << QStringList();
        QTest::addRow("a figure of the wrong type")
            << QStringLiteral(
                   R"({"rewards_chosen":"0.25","rewards_margin":0.75,"rewards_accuracy":[1]})")
            << true << QList<double>{nan, nan, 0.75, nan, nan, nan, nan, nan}
            << QStringList{QStringLiteral("step 1: field 'dpo.rewards_chosen': got \"0.25\", "
                                          "expected a number or null"),
                   QStringLiteral(
                       "step 1: field 'dpo.rewards_accuracy': got [1], expected a number or null")};
        QTest::addRow("dpo is not an object")
            << QStringLiteral("[0.25, 0.75]") << false << QList<double>()
            << QStringList{
                   QStringLiteral("step 1: field 'dpo': got [0.25,0.75], expected an object")};
        QTest::addRow("dpo is null")
            << QStringLiteral("null") << false << QList<double>()
            << QStringList{QStringLiteral("step 1: field 'dpo': got null, expected an object")};
    }

    void readsTheDpoObject()
    {
        QFETCH(QString, dpo);
        QFETCH(bool, hasPoint);
        QFETCH(QList<double>, expected);
        QFETCH(QStringList, problems);
        Folded run;
        run.add(startLine());
        run.add(stepLine(1, dpo));

        QCOMPARE(run.history.steps().size(), size_t(1)); // the step's other figures stay
        QCOMPARE(run.preference.any(), hasPoint);
        if (hasPoint) {
            const PreferencePoint& point = run.preference.points().front();
            QCOMPARE(point.step, int64_t(1));
            const QList<double> got = figures(point);
            QCOMPARE(got.size(), expected.size());
            for (qsizetype i = 0; i < got.size(); ++i)
                QVERIFY2(sameFigure(got[i], expected[i]),
                    qPrintable(
                        QStringLiteral("%1: got %2, expected %3")
                            .arg(QString::fromUtf8(tb::metrics::kPreferenceFields[size_t(i)].key))
                            .arg(got[i])
                            .arg(expected[i])));
        }
        QCOMPARE(run.history.messages().size(), size_t(problems.size()));
        for (qsizetype i = 0; i < problems.size(); ++i) {
            const tb::metrics::RunMessage& message = run.history.messages()[size_t(i)];
            QCOMPARE(message.level, std::string("unreadable"));
            const QString text = QString::fromStdString(message.text);
            QVERIFY2(text.startsWith(problems[i]), qPrintable(text));
        }
    }

    // A resumed run repeats the steps after its checkpoint (a new run_start
    // with resumed_from_step, or a step number going back): the repeats
    // replace the figures before, as RunHistory replaces the steps.
    void repeatedStepsReplaceTheirFigures_data()
    {
        QTest::addColumn<bool>("announced"); // a run_start with resumed_from_step 2 first
        QTest::addRow("resumed with a run_start") << true;
        QTest::addRow("a step number going back") << false;
    }

    void repeatedStepsReplaceTheirFigures()
    {
        QFETCH(bool, announced);
        const auto margin = [](double value) {
            return QStringLiteral(R"({"rewards_margin":%1})").arg(value);
        };
        Folded run;
        run.add(startLine());
        for (int step = 1; step <= 4; ++step)
            run.add(stepLine(step, margin(step)));
        if (announced) {
            run.add(startLine(2));
            QCOMPARE(run.preference.points().size(), size_t(2));
        }
        run.add(stepLine(3, margin(30)));
        run.add(stepLine(4, margin(40)));

        QCOMPARE(run.history.steps().size(), size_t(4));
        QList<double> steps, margins;
        for (const PreferencePoint& point : run.preference.points()) {
            steps << double(point.step);
            margins << point.rewardsMargin;
        }
        QCOMPARE(steps, (QList<double>{1, 2, 3, 4}));
        QCOMPARE(margins, (QList<double>{1, 2, 30, 40}));
    }
};

QTEST_APPLESS_MAIN(TestPreferenceSteps)
#include "test_preference_steps.moc"
