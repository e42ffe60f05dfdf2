#include "plan_fixture.h"

#include "plan/cpu_device.h"

#include "common/atomic_file.h"
#include "common/units.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

using namespace tb;

// A CPU as the planner's device: the figures come from the facts given, the
// ranks on one machine share it, and nothing of CUDA is counted.
class TestCpuDevice : public QObject {
    Q_OBJECT

    static plan::CpuFacts facts()
    {
        plan::CpuFacts f;
        f.cores = 8;
        f.memoryBytes = 32 * common::kGiB;
        f.matmulGflops = 200;
        f.model = "test CPU";
        return f;
    }

    static void writeCache(
        const std::string& path, const std::string& model, int cores, double gflops)
    {
        const nlohmann::json j{{"cores", cores}, {"memory_bytes", 32 * common::kGiB},
            {"matmul_gflops", gflops}, {"model", model}};
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        QVERIFY(common::writeFileAtomic(path, j.dump()).ok());
    }

    // The rate the cache file holds; 0 when there is none.
    static double cachedGflopsIn(const std::string& path)
    {
        std::ifstream in(path);
        return in ? nlohmann::json::parse(in).at("matmul_gflops").get<double>() : 0;
    }

private slots:
    void sharedByRanks_data()
    {
        QTest::addColumn<int>("ranks");
        QTest::addRow("one rank") << 1;
        QTest::addRow("two ranks") << 2;
        QTest::addRow("four ranks") << 4;
    }
    void sharedByRanks()
    {
        QFETCH(int, ranks);
        const plan::GpuSpec cpu = plan::cpuDevice(facts());
        QCOMPARE(cpu.id, std::string(plan::kCpuDeviceId));
        QVERIFY(cpu.isCpu);
        plan::PlanInput in;
        in.model = "SmolLM2-135M";
        in.method = plan::Method::Full;
        in.precision = plan::Precision::Fp32;
        in.gpusPerNode = ranks;
        in.sharding = plan::Sharding::Ddp;
        const plan::PlanResult r = plan::estimatePlan(in, presetModel("SmolLM2-135M"), cpu);
        QCOMPARE(r.usableBytes, 32 * common::kGiB / ranks);
        QCOMPARE(r.figure("peak_tflops")->value, 0.2 / ranks);
        for (const char* key : {"cuda_context", "nccl_buffers", "allocator_slack"})
            QVERIFY2(!r.component(key), key);
        QCOMPARE(r.peaks.allocated, r.peaks.reserved);
        QCOMPARE(r.peaks.deviceUsed - r.peaks.reserved, r.component("process_runtime")->bytes);
        QVERIFY(r.tokensPerSecond > 0);
    }

    // However small the budget, every thread multiplies a block and the
    // rate is that work over the time it took; its size is not checked.
    void measuresAGemmRate_data()
    {
        QTest::addColumn<int>("threads");
        QTest::addColumn<double>("seconds");
        QTest::addRow("one thread, 20 ms") << 1 << 0.02;
        QTest::addRow("one thread, 1 us") << 1 << 1e-6;
        QTest::addRow("two threads, 1 us") << 2 << 1e-6;
        QTest::addRow("four threads, no budget") << 4 << 0.0;
    }
    void measuresAGemmRate()
    {
        QFETCH(int, threads);
        QFETCH(double, seconds);
        const double gflops = plan::measureMatmulGflops(threads, seconds);
        QVERIFY2(std::isfinite(gflops) && gflops > 0, std::to_string(gflops).c_str());
    }

    void checksTheRate_data()
    {
        QTest::addColumn<double>("gflops");
        QTest::addColumn<double>("expected"); // 0: no earlier measurement
        QTest::addColumn<bool>("accepted");
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        QTest::addRow("positive, nothing to compare") << 50.0 << 0.0 << true;
        QTest::addRow("zero") << 0.0 << 0.0 << false;
        QTest::addRow("negative") << -1.0 << 0.0 << false;
        QTest::addRow("NaN") << nan << 0.0 << false;
        QTest::addRow("infinity") << inf << 0.0 << false;
        QTest::addRow("zero against a cached rate") << 0.0 << 100.0 << false;
        QTest::addRow("NaN against a cached rate") << nan << 100.0 << false;
        QTest::addRow("10x above the cached rate") << 1000.0 << 100.0 << false;
        QTest::addRow("10x below the cached rate") << 10.0 << 100.0 << false;
        QTest::addRow("3x above the cached rate") << 300.0 << 100.0 << true;
        QTest::addRow("3x below the cached rate") << 100.0 / 3 << 100.0 << true;
        QTest::addRow("4x above, the limit") << 400.0 << 100.0 << true;
        QTest::addRow("4x below, the limit") << 25.0 << 100.0 << true;
    }
    void checksTheRate()
    {
        QFETCH(double, gflops);
        QFETCH(double, expected);
        QFETCH(bool, accepted);
        const common::Status check = plan::checkMatmulGflops(gflops, expected);
        QCOMPARE(check.ok(), accepted);
        if (!check.ok()) {
            QVERIFY2(check.error().message.find("matmul_gflops") != std::string::npos,
                check.error().message.c_str());
            QVERIFY2(check.error().message.find("expected") != std::string::npos,
                check.error().message.c_str());
        }
    }

    // A refused rate is measured again once; only a second refusal is the
    // error.
    void measuresAgainOnce_data()
    {
        QTest::addColumn<QList<double>>("measured");
        QTest::addColumn<bool>("accepted");
        QTest::addColumn<double>("gflops");
        const double nan = std::numeric_limits<double>::quiet_NaN();
        QTest::addRow("plausible first") << QList<double>{50} << true << 50.0;
        QTest::addRow("zero, then plausible") << QList<double>{0, 50} << true << 50.0;
        QTest::addRow("NaN, then plausible") << QList<double>{nan, 50} << true << 50.0;
        QTest::addRow("zero twice") << QList<double>{0, 0} << false << 0.0;
        QTest::addRow("1000x the expected twice") << QList<double>{1e5, 1e5} << false << 0.0;
    }
    void measuresAgainOnce()
    {
        QFETCH(QList<double>, measured);
        QFETCH(bool, accepted);
        QFETCH(double, gflops);
        qsizetype calls = 0;
        const common::Result<double> rate = plan::measurePlausibleGflops(
            [&] { return calls < measured.size() ? measured[calls++] : (++calls, 50.0); }, 100);
        QCOMPARE(calls, measured.size());
        QCOMPARE(rate.ok(), accepted);
        if (accepted)
            QCOMPARE(*rate, gflops);
    }

    // What the cache file holds afterwards: a refused rate is never written,
    // and a cache of this CPU model is what a new measurement is held to.
    void cachesOnlyAPlausibleRate_data()
    {
        QTest::addColumn<QString>("cachedModel"); // empty: no cache file
        QTest::addColumn<int>("cachedCores");
        QTest::addColumn<double>("cachedGflops");
        QTest::addColumn<QList<double>>("measured");
        QTest::addColumn<bool>("accepted");
        QTest::addColumn<double>("fileGflops"); // 0: no cache file
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        const QString same = "test CPU";
        QTest::addRow("no cache, plausible")
            << QString() << 0 << 0.0 << QList<double>{50} << true << 50.0;
        QTest::addRow("no cache, zero twice")
            << QString() << 0 << 0.0 << QList<double>{0, 0} << false << 0.0;
        QTest::addRow("no cache, NaN twice")
            << QString() << 0 << 0.0 << QList<double>{nan, nan} << false << 0.0;
        QTest::addRow("no cache, inf twice")
            << QString() << 0 << 0.0 << QList<double>{inf, inf} << false << 0.0;
        QTest::addRow("no cache, zero then plausible")
            << QString() << 0 << 0.0 << QList<double>{0, 50} << true << 50.0;
        QTest::addRow("this CPU cached: reused")
            << same << 8 << 100.0 << QList<double>{} << true << 100.0;
        QTest::addRow("cached rate of zero: measured")
            << same << 8 << 0.0 << QList<double>{50} << true << 50.0;
        // 4 cores at 100 GFLOP/s: 200 expected of 8.
        QTest::addRow("other core count, within 4x")
            << same << 4 << 100.0 << QList<double>{300} << true << 300.0;
        QTest::addRow("other core count, 10x above twice")
            << same << 4 << 100.0 << QList<double>{2000, 2000} << false << 100.0;
        QTest::addRow("other core count, 10x below twice")
            << same << 4 << 100.0 << QList<double>{20, 20} << false << 100.0;
        QTest::addRow("other core count, 10x above then within")
            << same << 4 << 100.0 << QList<double>{2000, 250} << true << 250.0;
        QTest::addRow("other CPU model: not compared")
            << QString("other CPU") << 4 << 1.0 << QList<double>{2000} << true << 2000.0;
    }
    void cachesOnlyAPlausibleRate()
    {
        QFETCH(QString, cachedModel);
        QFETCH(int, cachedCores);
        QFETCH(double, cachedGflops);
        QFETCH(QList<double>, measured);
        QFETCH(bool, accepted);
        QFETCH(double, fileGflops);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath("tunebench/cpu.json").toStdString();
        if (!cachedModel.isEmpty())
            writeCache(path, cachedModel.toStdString(), cachedCores, cachedGflops);
        qsizetype calls = 0;
        const common::Result<plan::CpuFacts> cpu = plan::cachedOrMeasuredCpu(path, facts(),
            [&] { return calls < measured.size() ? measured[calls++] : (++calls, 50.0); });
        QCOMPARE(calls, measured.size());
        QCOMPARE(cpu.ok(), accepted);
        if (accepted)
            QCOMPARE(cpu->matmulGflops, fileGflops);
        else
            QVERIFY2(cpu.error().message.find("GFLOP/s") != std::string::npos,
                cpu.error().message.c_str());
        QCOMPARE(std::filesystem::exists(path), fileGflops > 0);
        QCOMPARE(cachedGflopsIn(path), fileGflops);
    }

    // This machine, measured once a process: the second call gives the same
    // rate with the cache file gone, so it did not measure again.
    void measuresThisCpuOnce()
    {
        const common::Result<plan::CpuFacts> first = plan::thisCpu();
        QVERIFY2(first.ok(), first.ok() ? "" : first.error().message.c_str());
        QVERIFY(first->cores >= 1);
        QVERIFY(first->memoryBytes > 0);
        QVERIFY(first->matmulGflops > 0);
        const std::string path = plan::cpuFactsCachePath();
        QCOMPARE(cachedGflopsIn(path), first->matmulGflops);
        QVERIFY(std::filesystem::remove(path));
        const common::Result<plan::CpuFacts> second = plan::thisCpu();
        QVERIFY(second.ok());
        QCOMPARE(second->matmulGflops, first->matmulGflops);
    }

    void plannedByName()
    {
        plan::PlanInput in;
        in.model = "SmolLM2-135M";
        in.vmSize.clear();
        in.gpu = "cpu";
        const common::Result<plan::PlanResult> r = plan::planFromCatalog(in, presetCatalog());
        QVERIFY2(r.ok(), r.ok() ? "" : r.error().message.c_str());
        QCOMPARE(r->gpuId, std::string("cpu"));
    }

    void initTestCase()
    {
        // The cache file goes to a scratch folder, not the user's home.
        QVERIFY(m_cache.isValid());
        qputenv("XDG_CACHE_HOME", m_cache.path().toUtf8());
    }

private:
    QTemporaryDir m_cache;
};

QTEST_GUILESS_MAIN(TestCpuDevice)
#include "test_cpu_device.moc"
