#include "../support/skip.h"
#include "export_tools.h"
#include "slurm_cluster.h"

#include <QtTest>

#include <QTemporaryDir>

#include <unistd.h>

// The sbatch script of `tunebench-cli export slurm` submitted with sbatch to
// a one-node Slurm cluster the test starts (Debian's slurmctld, slurmd and
// munged): srun starts the two ranks with torchrun's variables taken from
// SLURM_*, the LoRA run equals the same run through our own launcher, and
// Slurm's completion record (sacct --completion) says COMPLETED, exit 0.
// The multi-node script is checked in content: one node cannot run it.
using namespace tb::testutil;
using namespace tb::testutil::exports;
namespace distributed = tb::testutil::distributed;

class TestSlurmExport : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_referenceDir;
    std::unique_ptr<tb::testutil::SlurmCluster> m_cluster;

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void sbatchRunsTheExportedScript()
    {
        // slurmd starts job steps as the submitting user, which takes root.
        if (::geteuid() != 0)
            TB_SKIP(QStringLiteral(
                "slurmd must run as root to start job steps; run this suite as root (CI does)"));
        QString problem;
        m_referenceDir = launchReference(m_dir, &problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));

        m_cluster = std::make_unique<tb::testutil::SlurmCluster>(m_dir.filePath("slurm"));
        const QString started = m_cluster->start();
        QVERIFY2(started.isEmpty(), qPrintable(started));

        const ExportedRun exported = exportLoraRun(m_dir, "slurm", "job.sbatch",
            {"--cpus-per-task", "1", "--job-name", "tunebench-slurm-test"});
        QVERIFY2(exported.problem.isEmpty(), qPrintable(exported.problem));
        QString error;
        const QString jobId =
            m_cluster->command("sbatch", {"--parsable", exported.file}, &error, m_dir.path())
                .trimmed();
        QVERIFY2(!jobId.isEmpty(), qPrintable(error));
        const QString record = m_cluster->waitForCompletion(jobId, 300000);
        QFile output(m_dir.filePath("tunebench-slurm-test-" + jobId + ".out"));
        const QString jobOutput = output.open(QIODevice::ReadOnly)
            ? QString::fromUtf8(output.readAll().right(4000))
            : "(no job output " + output.fileName() + ")";
        QVERIFY2(record == "COMPLETED 0:0",
            qPrintable("sacct: '" + record + "'\n" + jobOutput + m_cluster->logs()));
        // Both ranks ran under srun with the job's rank variables.
        const QString differs = differsFromReference(exported.runDir, m_referenceDir);
        QVERIFY2(differs.isEmpty(), qPrintable(differs + "\n" + jobOutput));
    }

    void multiNodeScript_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QStringList>("lines");
        QTest::addRow("2 nodes x 8 GPUs")
            << QStringList{}
            << QStringList{"#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=8",
                   "#SBATCH --gpus-per-node=8", "#SBATCH --cpus-per-task=12",
                   "srun --nodes=2 --ntasks-per-node=8 --kill-on-bad-exit=1 bash -c"};
        QTest::addRow("4 nodes x 4 GPUs")
            << QStringList{"--nodes", "4", "--gpus-per-node", "4"}
            << QStringList{"#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=4",
                   "#SBATCH --gpus-per-node=4",
                   "srun --nodes=4 --ntasks-per-node=4 --kill-on-bad-exit=1 bash -c"};
    }
    void multiNodeScript()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QStringList, lines);
        const QString plan = m_dir.filePath("plan.yaml");
        QVERIFY(tb::common::writeFileAtomic(plan.toStdString(),
            "version: 1\nmodel: Llama-3.1-8B\nmethod: lora\nsharding: fsdp-full\n"
            "vm_size: Standard_ND96amsr_A100_v4\ngpus_per_node: 0\nnodes: 2\n"));
        const Ended made = exportJob("slurm", QStringList{"--plan", plan} + arguments);
        QVERIFY2(made.succeeded(), qPrintable(describe({made})));
        const QStringList script = made.out.split('\n');
        for (const QString& line : lines)
            QVERIFY2(made.out.contains(line), qPrintable(line + "\n---\n" + made.out));
        // Rank 0 listens on the allocation's first node.
        QVERIFY(script.contains(
            "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)"));
        // Each task maps Slurm's task variables to torchrun's and trains on its GPU.
        for (const char* part : {"RANK=\"$SLURM_PROCID\"", "WORLD_SIZE=\"$SLURM_NTASKS\"",
                 "LOCAL_RANK=\"$SLURM_LOCALID\"", "NODE_RANK=\"$SLURM_NODEID\"",
                 "exec tunebench-cli train run.yaml --device cuda"})
            QVERIFY2(made.out.contains(part), qPrintable(QString(part) + "\n---\n" + made.out));
    }

    void cleanupTestCase() { m_cluster.reset(); }
};

QTEST_GUILESS_MAIN(TestSlurmExport)
#include "test_slurm_export.moc"
