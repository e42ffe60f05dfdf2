#include "../support/deep_json.h"
#include "plan_fixture.h"

#include "common/units.h"
#include "plan/calibration.h"

#include <QTemporaryDir>

#include <fstream>

using namespace tb;

namespace {

plan::CalibrationRun run(double planned, double measured, double reserve, double transients)
{
    plan::CalibrationRun r;
    r.runDir = "runs/r";
    r.runId = "r";
    r.plannedTokensPerSecond = planned;
    r.measuredTokensPerSecond = measured;
    r.plannedUtilisation = 0.4;
    r.measuredReserveBytes = reserve;
    r.plannedTransientBytes = transients;
    return r;
}

} // namespace

// The calibration file: figures from runs, applied to later plans, kept on disk.
class TestCalibration : public QObject {
    Q_OBJECT

private slots:
    // Utilisation scales by measured over planned tokens/s, the median run's.
    void utilisationFromRuns_data()
    {
        QTest::addColumn<QList<double>>("measuredOverPlanned");
        QTest::addColumn<double>("utilisation");
        QTest::addRow("one run at half speed") << QList<double>{0.5} << 0.2;
        QTest::addRow("three runs: the median") << QList<double>{0.5, 1.0, 2.0} << 0.4;
        QTest::addRow("capped at 1") << QList<double>{4.0} << 1.0;
    }
    void utilisationFromRuns()
    {
        QFETCH(QList<double>, measuredOverPlanned);
        QFETCH(double, utilisation);
        std::vector<plan::CalibrationRun> runs;
        for (double ratio : measuredOverPlanned)
            runs.push_back(run(1000, 1000 * ratio, -1, 0));
        const plan::DeviceCalibration d = plan::calibrateDevice("H100-SXM", runs);
        QCOMPARE(d.utilisation, utilisation);
        QCOMPARE(d.allocatorOverhead, 0.0); // no reserve measured
        QCOMPARE(QString::fromStdString(d.note()),
            QStringLiteral("calibrated by %1 run%2 on H100-SXM")
                .arg(measuredOverPlanned.size())
                .arg(measuredOverPlanned.size() == 1 ? "" : "s"));
    }

    // Runs that measured device_used (CPU runs) calibrate what is beyond the tensors.
    void runtimeFromRuns()
    {
        plan::CalibrationRun r = run(1, 1, -1, 0);
        r.peak = plan::PeakLevel::Device;
        r.plannedAllocatedBytes = 30e6;
        r.measuredPeakBytes = 190e6;
        plan::Calibration c;
        c.set(plan::calibrateDevice("cpu", {r}));
        QCOMPARE(c.devices[0].runtimeBytes, 160e6);
        plan::PlanInput in;
        plan::applyCalibration(c, "cpu", in);
        QCOMPARE(in.cudaContextGiB, 160e6 / common::kGiB);
    }

    void allocatorReserveFromRuns()
    {
        const plan::DeviceCalibration d =
            plan::calibrateDevice("A100-80GB-SXM", {run(1, 1, 1e9, 10e9), run(1, 1, 3e9, 10e9)});
        QCOMPARE(d.allocatorOverhead, 0.2);
    }

    // A calibration applies to plans on its device, never over given figures.
    void appliedToLaterPlans()
    {
        plan::Calibration c;
        c.set(plan::calibrateDevice("A100-80GB-PCIe", {run(1000, 500, 2e9, 10e9)}));
        plan::PlanInput in;
        QCOMPARE(plan::applyCalibration(c, "A100-80GB-PCIe", in),
            std::string("calibrated by 1 run on A100-80GB-PCIe"));
        QCOMPARE(in.utilisationOverride, 0.2);
        QCOMPARE(in.allocatorOverhead, 0.2);
        const plan::PlanResult r = plan::estimatePlan(in, presetModel("Llama-3.1-8B"),
            presetGpu("A100-80GB-PCIe"), presetVm("Standard_NC24ads_A100_v4"));
        QCOMPARE(r.calibration, in.calibrationNote);

        plan::PlanInput given;
        given.utilisationOverride = 0.3;
        plan::applyCalibration(c, "A100-80GB-PCIe", given);
        QCOMPARE(given.utilisationOverride, 0.3);

        plan::PlanInput other;
        QVERIFY(plan::applyCalibration(c, "H100-SXM", other).empty());
        QCOMPARE(other.utilisationOverride, 0.0);
    }

    void savedAndLoaded()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("sub/calibration.json").toStdString();
        plan::Calibration c;
        c.set(plan::calibrateDevice("cpu", {run(100, 80, -1, 5e6)}));
        QVERIFY(plan::saveCalibration(path, c).ok());
        const common::Result<plan::Calibration> loaded = plan::loadCalibration(path);
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
        QCOMPARE(loaded->devices.size(), size_t(1));
        QCOMPARE(loaded->devices[0].utilisation, c.devices[0].utilisation);
        QCOMPARE(loaded->devices[0].runs.size(), size_t(1));
        QCOMPARE(loaded->devices[0].runs[0].measuredTokensPerSecond, 80.0);
        // A missing file is no calibration, not an error.
        QVERIFY(plan::loadCalibration(dir.filePath("none.json").toStdString())->devices.empty());
    }

    void badFileNamesTheField()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("calibration.json").toStdString();
        std::ofstream(path) << R"({"schema":"tunebench.calibration/1","devices":[{"gpu":"cpu",
            "utilisation":"high","allocator_overhead":0,"runtime_bytes":0,"runs":[]}]})";
        const common::Result<plan::Calibration> loaded = plan::loadCalibration(path);
        QVERIFY(!loaded.ok());
        const QString message = QString::fromStdString(loaded.error().message);
        QVERIFY2(message.contains(QString::fromStdString(path)), qPrintable(message));
        QVERIFY2(message.contains("devices[cpu].utilisation"), qPrintable(message));
        QVERIFY2(message.contains("\"high\""), qPrintable(message));
    }

    // Review M1: a calibration file may come from another machine; nested
    // 200,000 deep it is refused while parsing (a refused field used to be
    // dumped whole, overflowing the stack), and a long field is quoted cut.
    void hostileFilesAreRefused_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("expected");
        const auto row = [](const char* name, const std::string& content, const char* expected) {
            QTest::addRow("%s", name) << QByteArray::fromStdString(content) << expected;
        };
        row("an array", tb::test::deepJsonArray(), "nested deeper than 64 levels");
        row("schema", R"({"schema":)" + tb::test::deepJsonArray() + "}",
            "nested deeper than 64 levels");
        row("long utilisation",
            "{\"schema\":\"tunebench.calibration/"
            "1\",\"devices\":[{\"gpu\":\"cpu\",\"utilisation\":\""
                + std::string(100000, 'x') + "\"}]}",
            "more bytes), expected a number");
    }
    void hostileFilesAreRefused()
    {
        QFETCH(QByteArray, content);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const std::string path = dir.filePath("calibration.json").toStdString();
        std::ofstream(path) << content.toStdString();
        const common::Result<plan::Calibration> loaded = plan::loadCalibration(path);
        QVERIFY(!loaded.ok());
        const QString message = QString::fromStdString(loaded.error().message);
        QVERIFY2(message.startsWith(QString::fromStdString(path) + ": "), qPrintable(message));
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY2(message.size() < 400, qPrintable(message));
    }
};

QTEST_GUILESS_MAIN(TestCalibration)
#include "test_calibration.moc"
