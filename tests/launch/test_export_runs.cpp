#include "export_tools.h"

#include <QtTest>

#include <QTemporaryDir>

// The torchrun script and the accelerate config that `tunebench-cli export`
// writes, run by the real torchrun and `accelerate launch` (the reference
// environment's): a 2-rank LoRA fine-tune of stories260K through each ends
// with the adapter of the same run through our own launcher. A CPU run
// config, so the job asks for no GPU and its ranks train on the CPU.
using namespace tb::testutil;
using namespace tb::testutil::exports;
namespace distributed = tb::testutil::distributed;

class TestExportRuns : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_referenceDir;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QString problem;
        m_referenceDir = launchReference(m_dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }

    void cleanupTestCase() { stopLoaderServer(); }

    void torchrunRunsTheExportedScript()
    {
        const ExportedRun exported = exportLoraRun(m_dir, "torchrun", "torchrun.sh");
        QVERIFY2(exported.problem.isEmpty(), qPrintable(exported.problem));
        const Ended ran = run("sh", {exported.file}, 300000);
        QVERIFY2(ran.succeeded(), qPrintable(describe({ran})));
        const QString differs = differsFromReference(exported.runDir, m_referenceDir);
        QVERIFY2(differs.isEmpty(), qPrintable(differs));
    }

    void accelerateLaunchRunsTheExportedConfig()
    {
        const ExportedRun exported = exportLoraRun(m_dir, "accelerate", "accelerate.yaml");
        QVERIFY2(exported.problem.isEmpty(), qPrintable(exported.problem));
        QString problem;
        const nlohmann::json loaded = loadWithTool("accelerate", exported.file, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QCOMPARE(loaded["num_processes"].get<int>(), 2);
        // The export prints the `accelerate launch` command that goes with it.
        QVERIFY2(exported.out.startsWith("accelerate launch --config_file " + exported.file),
            qPrintable(exported.out));
        const Ended ran = run("bash", {"-c", exported.out}, 300000);
        QVERIFY2(ran.succeeded(), qPrintable(describe({ran})));
        const QString differs = differsFromReference(exported.runDir, m_referenceDir);
        QVERIFY2(differs.isEmpty(), qPrintable(differs));
    }
};

QTEST_GUILESS_MAIN(TestExportRuns)
#include "test_export_runs.moc"
