#include "plan_fixture.h"

#include "plan/cpu_device.h"

#include "common/units.h"

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

    // The measurement runs and gives a rate; its size is not checked.
    void measuresAGemmRate()
    {
        QVERIFY(plan::measureMatmulGflops(1, 0.02) > 0);
        const plan::CpuFacts& f = plan::thisCpu();
        QVERIFY(f.cores >= 1);
        QVERIFY(f.memoryBytes > 0);
        QVERIFY(f.matmulGflops > 0);
        QCOMPARE(&plan::thisCpu(), &f); // measured once
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
