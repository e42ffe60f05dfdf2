#include "../support/qt_test_paths.h"
#include "common/atomic_file.h"
#include "common/units.h"
#include "config/config_loader.h"
#include "launch/run_data_profile.h"
#include "launch/run_plan.h"
#include "launch/run_prediction.h"
#include "metrics/run_catalog.h"
#include "metrics/run_history.h"
#include "plan/calibration.h"
#include "plan/catalog.h"
#include "plan/cpu_device.h"
#include "plan/estimator.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace tb;

// Runs of our own trainer on this CPU (stories260K, recorded as their
// events.jsonl in tests/launch/data/runs) held against the plans of their
// configurations, and the calibration made from them.
namespace {

const std::string kRunsDir = tb::test::sourcePath("tests/launch/data/runs");
const std::string kModel = tb::test::demoModelDir();
const char* kRuns[] = {"full-mb4", "full-mb8", "lora-mb4", "lora-mb8"};

std::string runDir(const char* name)
{
    return kRunsDir + "/" + name;
}

const plan::Catalog& catalog()
{
    static const common::Result<plan::Catalog> c =
        plan::Catalog::load(tb::test::sourcePath("presets"));
    if (!c.ok())
        qFatal("presets: %s", c.error().message.c_str());
    return *c;
}

plan::PlanResult planOf(const plan::PlanInput& in)
{
    const common::Result<plan::PlanResult> r = plan::planFromCatalog(in, catalog());
    if (!r.ok())
        qFatal("%s", r.error().message.c_str());
    return *r;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace

class TestRunCalibration : public QObject {
    Q_OBJECT

    std::vector<launch::RunMeasurement> m_runs;
    QTemporaryDir m_scratch;

private slots:
    void initTestCase()
    {
        qputenv("XDG_CACHE_HOME", m_scratch.path().toUtf8()); // this CPU's figures kept apart
        // A fixed GEMM rate, high enough that no calibrated utilisation is
        // capped at 1: the arithmetic is under test, not this machine's
        // speed (under a sanitizer or a loaded CI it measures a fraction).
        const common::Result<plan::CpuFacts> here = plan::measureThisCpu();
        QVERIFY2(here.ok(), here.ok() ? "" : here.error().message.c_str());
        const nlohmann::json cache{{"cores", here->cores}, {"memory_bytes", here->memoryBytes},
            {"matmul_gflops", 1000.0}, {"model", here->model}};
        const std::string cachePath = plan::cpuFactsCachePath();
        std::filesystem::create_directories(std::filesystem::path(cachePath).parent_path());
        QVERIFY(common::writeFileAtomic(cachePath, cache.dump()).ok());
        for (const char* name : kRuns) {
            const auto m = launch::readRunMeasurement(runDir(name), {}, kModel);
            QVERIFY2(m.ok(), m.ok() ? "" : m.error().message.c_str());
            m_runs.push_back(*m);
        }
    }

    void readsEachRun_data()
    {
        QTest::addColumn<int>("index");
        QTest::addColumn<bool>("full");
        QTest::addColumn<int>("microBatch");
        for (int i = 0; i < 4; ++i)
            QTest::addRow("%s", kRuns[i]) << i << (i < 2) << (i % 2 ? 8 : 4);
    }
    void readsEachRun()
    {
        QFETCH(int, index);
        QFETCH(bool, full);
        QFETCH(int, microBatch);
        const launch::RunMeasurement& m = m_runs[size_t(index)];
        QVERIFY(m.onCpu);
        QCOMPARE(m.input.gpu, std::string("cpu"));
        QCOMPARE(m.input.method == plan::Method::Full, full);
        QCOMPARE(m.input.microBatch, microBatch);
        QCOMPARE(m.input.seqLen, 256);
        QVERIFY(m.input.packing);
        QCOMPARE(m.steps, 12);
        QVERIFY(m.tokensPerSecond > 0);
        QVERIFY(m.peakResidentBytes > 0);
        QCOMPARE(m.peakAllocatedBytes, -1.0); // a CPU run reports resident memory only
        // Calibration reads the figures the runs list and Compare page show.
        const metrics::RunEntry entry = metrics::readRunEntry(m.runDir);
        QCOMPARE(m.tokensPerSecond, entry.tokensPerSecond);
        QCOMPARE(m.peakResidentBytes, double(entry.peakBytes));
    }

    // Calibrated from the runs, their plans match them: the median of
    // measured over planned is 1 for tokens/s, and the median difference of
    // device_used is 0 (whatever this machine's GEMM rate).
    void calibrationMatchesTheRuns()
    {
        std::vector<plan::CalibrationRun> runs;
        for (const launch::RunMeasurement& m : m_runs) {
            const plan::PlanResult r = planOf(m.input);
            plan::CalibrationRun run = plan::calibrationRun(r, r.figure("utilisation")->value);
            run.measuredTokensPerSecond = m.tokensPerSecond;
            run.peak = plan::PeakLevel::Device;
            run.measuredPeakBytes = m.peakResidentBytes;
            runs.push_back(run);
        }
        plan::Calibration calibration;
        calibration.set(plan::calibrateDevice("cpu", runs));
        std::vector<double> rates, memory;
        for (const launch::RunMeasurement& m : m_runs) {
            plan::PlanInput in = m.input;
            QCOMPARE(plan::applyCalibration(calibration, "cpu", in),
                std::string("calibrated by 4 runs on cpu"));
            const plan::PlanResult r = planOf(in);
            QCOMPARE(r.calibration, std::string("calibrated by 4 runs on cpu"));
            rates.push_back(m.tokensPerSecond / r.tokensPerSecond);
            memory.push_back(m.peakResidentBytes - r.peaks.deviceUsed);
        }
        QVERIFY(std::fabs(median(rates) - 1) < 1e-9);
        QVERIFY(std::fabs(median(memory)) < 1);
    }

    // The demo DPO recipe (presets/recipes/dpo.yaml), recorded on this CPU
    // in tests/launch/data/dpo-recipe, against the plan its run_start
    // carries: the recipe on its own rows (pairs of a chosen and a rejected
    // row, their completion tokens), calibrated by the four supervised runs.
    // Its measured over planned tokens/s must lie within the spread those
    // runs show against their own calibrated plans, and its peak be missed
    // by no more than the worst of theirs: the tolerance the supervised rows
    // have.
    void dpoRecipeWithinTheRunsSpread()
    {
        const plan::Calibration calibration = calibratedByTheRuns();
        std::vector<double> rates, memory;
        for (const launch::RunMeasurement& m : m_runs) {
            plan::PlanInput in = m.input;
            plan::applyCalibration(calibration, "cpu", in);
            const plan::PlanResult r = planOf(in);
            rates.push_back(m.tokensPerSecond / r.tokensPerSecond);
            memory.push_back(m.peakResidentBytes - r.peaks.deviceUsed);
        }
        const auto dpo = launch::readRunMeasurement(
            tb::test::sourcePath("tests/launch/data/dpo-recipe"), {}, kModel);
        QVERIFY2(dpo.ok(), dpo.ok() ? "" : dpo.error().message.c_str());
        const auto recipe = launch::planInputOfRunFile(
            tb::test::sourcePath("presets/recipes/dpo.yaml"), plan::PlanInput{}, true);
        QVERIFY2(recipe.ok(), recipe.ok() ? "" : recipe.error().message.c_str());
        plan::PlanInput in = *recipe;
        QVERIFY(in.objective == plan::Objective::Dpo);
        QCOMPARE(in.data.rows, std::int64_t(32)); // 16 pairs, two rows each
        QCOMPARE(in.data.microBatches, std::int64_t(4)); // 4 pairs a micro-batch
        plan::applyCalibration(calibration, "cpu", in);
        const plan::PlanResult r = planOf(in);
        const double rate = dpo->tokensPerSecond / r.tokensPerSecond;
        const double peak = dpo->peakResidentBytes - r.peaks.deviceUsed;
        const auto [rateLow, rateHigh] = std::minmax_element(rates.begin(), rates.end());
        double worstMiss = 0;
        for (const double miss : memory)
            worstMiss = std::max(worstMiss, std::fabs(miss));
        std::printf(
            "  dpo-recipe: tokens/s measured %.0f planned %.0f (%.2fx; the runs %.2f-%.2fx), "
            "peak measured %.1f MiB planned %.1f MiB (%+.1f MiB; the runs within %.1f)\n",
            dpo->tokensPerSecond, r.tokensPerSecond, rate, *rateLow, *rateHigh,
            dpo->peakResidentBytes / common::kMiB, r.peaks.deviceUsed / common::kMiB,
            peak / common::kMiB, worstMiss / common::kMiB);
        QVERIFY2(rate >= *rateLow && rate <= *rateHigh, "tokens/s outside the runs' spread");
        QVERIFY2(std::fabs(peak) <= worstMiss, "peak missed by more than any run's");
    }

    void calibrateFromTheCli()
    {
        const QString file = m_scratch.filePath("calibration.json");
        QStringList args{"plan", "--calibrate", "--model", QString::fromStdString(kModel),
            "--calibration", file};
        for (const char* name : kRuns)
            args << QString::fromStdString(runDir(name));
        QProcess cli;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("TUNEBENCH_PRESETS_DIR", tb::test::qSourcePath("presets"));
        cli.setProcessEnvironment(env);
        cli.start(QString::fromUtf8(tb::test::cliProgram()), args);
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 0);
        const QString out = QString::fromUtf8(cli.readAllStandardOutput());
        QVERIFY2(out.contains("calibrated by 4 runs on cpu"), qPrintable(out));

        cli.start(QString::fromUtf8(tb::test::cliProgram()),
            {"plan", "--gpu", "cpu", "--model", QString::fromStdString(kModel), "--method", "lora",
                "--precision", "fp32", "--calibration", file, "--json"});
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 0);
        const nlohmann::json plan =
            nlohmann::json::parse(cli.readAllStandardOutput().toStdString());
        QCOMPARE(plan["calibration"], "calibrated by 4 runs on cpu");
    }

    void errorsNameTheFile()
    {
        const auto missing =
            launch::readRunMeasurement(m_scratch.filePath("none").toStdString(), {});
        QVERIFY(!missing.ok());
        QVERIFY2(missing.error().message.find("none/events.jsonl") != std::string::npos,
            missing.error().message.c_str());

        // A GPU run names no GPU model: the caller must.
        const std::string dir = m_scratch.filePath("cuda-run").toStdString();
        QVERIFY(QDir().mkpath(QString::fromStdString(dir)));
        std::ifstream in(runDir("lora-mb4") + "/events.jsonl");
        std::ofstream out(dir + "/events.jsonl");
        for (std::string line; std::getline(in, line);) {
            nlohmann::json event = nlohmann::json::parse(line);
            if (event["type"] == "run_start")
                event["config"]["device"] = "cuda";
            out << event.dump() << "\n";
        }
        out.close();
        const auto cuda = launch::readRunMeasurement(dir, {}, kModel);
        QVERIFY(!cuda.ok());
        QVERIFY2(cuda.error().message.find("--gpu") != std::string::npos
                || cuda.error().hint.find("--gpu") != std::string::npos,
            cuda.error().message.c_str());
        QVERIFY(launch::readRunMeasurement(dir, "H100-SXM", kModel).ok());
    }

    // A GPU run records the preset CUDA's name for its GPU finds, and a
    // prediction in the allocator's bytes; calibration then needs no --gpu.
    void predictsOnTheRunsDevice()
    {
        config::RunConfig run = configOf("lora-mb4");
        const auto cpu = launch::predictRun(run, 2, 1, plan::kCpuDeviceId);
        QVERIFY2(cpu.ok(), cpu.ok() ? "" : cpu.error().message.c_str());
        QVERIFY(cpu->gpu.empty());
        QCOMPARE(cpu->peakMeasure, metrics::PeakMeasure::Resident);
        QVERIFY(cpu->device.starts_with("CPU: "));

        const auto h100 = launch::gpuPresetOfDevice("NVIDIA H100 80GB HBM3");
        QVERIFY2(h100.ok(), h100.ok() ? "" : h100.error().message.c_str());
        QCOMPARE(*h100, std::string("H100-SXM"));
        const auto gpu = launch::predictRun(run, 2, 1, *h100);
        QVERIFY2(gpu.ok(), gpu.ok() ? "" : gpu.error().message.c_str());
        QCOMPARE(gpu->gpu, std::string("H100-SXM"));
        QCOMPARE(gpu->peakMeasure, metrics::PeakMeasure::Allocated);
        const plan::PlanResult plan = planOf(launch::planInputOfRun(run, 2, 1, "H100-SXM"));
        QCOMPARE(gpu->peakBytesPerRank, int64_t(plan.peaks.allocated));
        // The CUDA context and NCCL are outside what the allocator counts.
        const double outside = plan.peaks.deviceUsed - plan.peaks.reserved;
        QVERIFY(outside > 0);
        for (const plan::PhasePeak& phase : plan.phases)
            if (phase.phase == plan::Phase::Export)
                QCOMPARE(gpu->exportBytesPerRank, int64_t(phase.bytes - outside));

        // The run's events say the GPU; calibration reads it from there.
        const std::string dir = m_scratch.filePath("h100-run").toStdString();
        writeRunOnGpu("lora-mb4", dir, gpu->toJson());
        const auto measured = launch::readRunMeasurement(dir, {}, kModel);
        QVERIFY2(measured.ok(), measured.ok() ? "" : measured.error().message.c_str());
        QCOMPARE(measured->input.gpu, std::string("H100-SXM"));
    }

    void namesAGpuWithoutAPreset_data()
    {
        QTest::addColumn<QString>("device");
        QTest::addColumn<QString>("expected");
        QTest::addRow("unlisted") << "NVIDIA GeForce RTX 4090"
                                  << "no GPU preset is called 'NVIDIA GeForce RTX 4090'";
        QTest::addRow("unnamed") << ""
                                 << "did not say which GPU";
        QTest::addRow("an id is not a name") << "H100-SXM"
                                             << "hardware/gpus.yaml: device_names";
    }
    void namesAGpuWithoutAPreset()
    {
        QFETCH(QString, device);
        QFETCH(QString, expected);
        const auto preset = launch::gpuPresetOfDevice(device.toStdString());
        QVERIFY(!preset.ok());
        QVERIFY2(preset.error().message.find(expected.toStdString()) != std::string::npos,
            preset.error().message.c_str());
        const auto unknown = launch::predictRun(configOf("full-mb4"), 1, 1, "H900");
        QVERIFY(!unknown.ok());
        QVERIFY2(unknown.error().message.find("H900: no such GPU preset") != std::string::npos,
            unknown.error().message.c_str());
    }

private:
    // The calibration of this CPU made from the four supervised runs.
    plan::Calibration calibratedByTheRuns() const
    {
        std::vector<plan::CalibrationRun> runs;
        for (const launch::RunMeasurement& m : m_runs) {
            const plan::PlanResult r = planOf(m.input);
            plan::CalibrationRun run = plan::calibrationRun(r, r.figure("utilisation")->value);
            run.measuredTokensPerSecond = m.tokensPerSecond;
            run.peak = plan::PeakLevel::Device;
            run.measuredPeakBytes = m.peakResidentBytes;
            runs.push_back(run);
        }
        plan::Calibration calibration;
        calibration.set(plan::calibrateDevice("cpu", runs));
        return calibration;
    }

    // The resolved config a recorded run started with, on the demo model.
    static config::RunConfig configOf(const char* name)
    {
        const auto history = metrics::readRunHistory(runDir(name) + "/events.jsonl");
        if (!history || !history->start())
            qFatal("%s: no run_start", name);
        const config::LoadReport loaded = config::parseRunConfig(history->start()->config.dump());
        if (!loaded.ok())
            qFatal("%s: %s", name, loaded.error().message.c_str());
        config::RunConfig config = *loaded.config;
        config.model = kModel;
        return config;
    }

    // A copy of a recorded run as if it ran on CUDA with `prediction`.
    static void writeRunOnGpu(
        const char* name, const std::string& dir, const nlohmann::json& prediction)
    {
        QVERIFY(QDir().mkpath(QString::fromStdString(dir)));
        std::ifstream in(runDir(name) + "/events.jsonl");
        std::ofstream out(dir + "/events.jsonl");
        for (std::string line; std::getline(in, line);) {
            nlohmann::json event = nlohmann::json::parse(line);
            if (event["type"] == "run_start") {
                event["config"]["device"] = "cuda";
                event["prediction"] = prediction;
            }
            out << event.dump() << "\n";
        }
    }
};

QTEST_GUILESS_MAIN(TestRunCalibration)
#include "test_run_calibration.moc"
