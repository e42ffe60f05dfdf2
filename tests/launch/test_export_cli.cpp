#include "../support/cli_outcome.h"
#include "../support/qt_test_paths.h"

#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <yaml-cpp/yaml.h>

// tunebench-cli export as a user runs it: each format from a saved plan and
// a run config, --out written atomically, and bad input exiting 2 with a
// message that names the file and the field.
namespace {

using Outcome = tb::test::CliOutcome;

Outcome runCli(const QStringList& args)
{
    tb::test::ProgramSetup setup;
    setup.environment.insert("TUNEBENCH_PRESETS_DIR", tb::test::qSourcePath("presets"));
    return tb::test::runProgram(
        QString::fromUtf8(tb::test::cliProgram()), QStringList{"export"} + args, 30000, setup);
}

bool writeText(const QString& path, const QByteArray& text)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(text) == text.size();
}

QByteArray readText(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

class TestExportCli : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_plan;
    QString m_config;

    QString path(const char* name) const { return m_dir.filePath(QString::fromLatin1(name)); }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_plan = path("plan.yaml");
        m_config = path("run.yaml");
        // 2 x Standard_ND96amsr_A100_v4 (8 x A100 80GB each), ZeRO-3 with optimizer offload.
        QVERIFY(writeText(m_plan,
            "version: 1\nmodel: Llama-3.1-8B\nmethod: full\n"
            "sharding: zero3\noffload: optimizer\n"
            "vm_size: Standard_ND96amsr_A100_v4\ngpus_per_node: 0\n"
            "nodes: 2\ngrad_accum: 2\n"));
        QVERIFY(writeText(m_config,
            "name: llama-sft\nmodel: ./model\ndevice: cuda\n"
            "precision: bf16-mixed\ndata:\n  train: train.jsonl\n"
            "training:\n  grad_accum: 2\n  micro_batch: 4\n"));
    }

    void everyFormat_data()
    {
        QTest::addColumn<QString>("format");
        QTest::addColumn<QStringList>("extra");
        QTest::addColumn<QStringList>("parts");
        QTest::addRow("torchrun") << "torchrun" << QStringList{}
                                  << QStringList{"torchrun --nnodes=2 --nproc_per_node=8",
                                         "--no_python tunebench-cli train " + m_config
                                             + " --device cuda"};
        QTest::addRow("accelerate") << "accelerate" << QStringList{}
                                    << QStringList{"distributed_type: MULTI_GPU",
                                           "sharding: the plan says zero3 (offload optimizer), "
                                           "the run config ddp (offload none)",
                                           "num_machines: 2", "num_processes: 16"};
        QTest::addRow("azureml") << "azureml" << QStringList{"--cluster", "a100-cluster"}
                                 << QStringList{"compute: azureml:a100-cluster",
                                        "instance_type: Standard_ND96amsr_A100_v4",
                                        "process_count_per_instance: 1",
                                        "launch run.yaml --nproc 8 --nnodes 2"};
        QTest::addRow("azureml per gpu")
            << "azureml" << QStringList{"--per-gpu"}
            << QStringList{"process_count_per_instance: 8",
                   "command: \"tunebench-cli train run.yaml --device cuda\""};
        QTest::addRow("slurm") << "slurm" << QStringList{"--partition", "gpu"}
                               << QStringList{"#SBATCH --job-name=llama-sft", "#SBATCH --nodes=2",
                                      "#SBATCH --ntasks-per-node=8", "#SBATCH --gpus-per-node=8",
                                      "#SBATCH --cpus-per-task=12", "#SBATCH --partition=gpu",
                                      "#SBATCH --time="};
    }
    void everyFormat()
    {
        QFETCH(QString, format);
        QFETCH(QStringList, extra);
        QFETCH(QStringList, parts);
        const Outcome r =
            runCli(QStringList{format, "--plan", m_plan, "--config", m_config} + extra);
        QCOMPARE(r.exitCode, 0);
        for (const QString& part : parts)
            QVERIFY2(r.out.contains(part), qPrintable(part + "\n---\n" + r.out));
        if (format == "accelerate" || format == "azureml") {
            try {
                QVERIFY(YAML::Load(r.out.toStdString()).IsMap());
            } catch (const std::exception& e) {
                QFAIL(e.what());
            }
        }
    }

    void outIsWrittenAtomically()
    {
        const QString out = path("accelerate.yaml");
        QVERIFY(writeText(out, "old content that is longer than nothing\n"));
        const Outcome r =
            runCli({"accelerate", "--plan", m_plan, "--config", m_config, "--out", out});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.err.contains("wrote " + out));
        // stdout carries the command that goes with the file.
        QVERIFY2(r.out.startsWith("accelerate launch --config_file " + out), qPrintable(r.out));
        const QByteArray written = readText(out);
        QVERIFY(!written.contains("old content"));
        QCOMPARE(YAML::Load(written.toStdString())["num_processes"].as<int>(), 16);
        // A failed export leaves the file as it was.
        const Outcome bad = runCli({"accelerate", "--plan", path("missing.yaml"), "--out", out});
        QCOMPARE(bad.exitCode, 2);
        QCOMPARE(readText(out), written);
        QCOMPARE(
            QDir(m_dir.path()).entryList(QDir::Files | QDir::Hidden).filter("accelerate").size(),
            1);
    }

    void slurmScriptParses()
    {
        const QString out = path("job.sbatch");
        const Outcome r = runCli({"slurm", "--plan", m_plan, "--config", m_config, "--out", out});
        QCOMPARE(r.exitCode, 0);
        QProcess bash;
        bash.start("bash", {"-n", out});
        QVERIFY(bash.waitForFinished(10000));
        QCOMPARE(bash.exitCode(), 0);
    }

    void badInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QStringList>("parts"); // each must appear in stderr
        QTest::addRow("unknown format") << QStringList{"kubernetes", "--plan", "PLAN"}
                                        << QStringList{"unknown format 'kubernetes'"};
        QTest::addRow("no format")
            << QStringList{"--plan", "PLAN"} << QStringList{"expected one format"};
        QTest::addRow("nothing to export") << QStringList{"slurm"} << QStringList{"give --plan"};
        QTest::addRow("missing plan")
            << QStringList{"slurm", "--plan", "DIR/nope.yaml"} << QStringList{"nope.yaml"};
        QTest::addRow("unknown vm") << QStringList{"slurm", "--plan", "DIR/badvm.yaml"}
                                    << QStringList{"badvm.yaml", "vm_size", "Standard_ND96asr_v4"};
        QTest::addRow("bad plan field") << QStringList{"torchrun", "--plan", "DIR/badmb.yaml"}
                                        << QStringList{"badmb.yaml:3", "micro_batch: got -3"};
        QTest::addRow("bad run config") << QStringList{"slurm", "--plan", "PLAN", "--config",
            "DIR/badrun.yaml"} << QStringList{"badrun.yaml:", "modle"};
        QTest::addRow("per-gpu elsewhere") << QStringList{"slurm", "--plan", "PLAN", "--per-gpu"}
                                           << QStringList{"--per-gpu: only for azureml"};
        QTest::addRow("port") << QStringList{"torchrun", "--plan", "PLAN", "--master-port", "70000"}
                              << QStringList{"--master-port: got 70000"};
        QTest::addRow("cluster") << QStringList{"azureml", "--plan", "PLAN", "--cluster",
            "azureml:x"} << QStringList{"--cluster: got 'azureml:x'"};
        QTest::addRow("out dir") << QStringList{"slurm", "--plan", "PLAN", "--out",
            "/nonexistent/dir/j.sh"}
                                 << QStringList{"--out", "/nonexistent/dir/j.sh"};
    }
    void badInput()
    {
        QFETCH(QStringList, args);
        QFETCH(QStringList, parts);
        QVERIFY(writeText(
            path("badvm.yaml"), "version: 1\nmodel: Llama-3-8B\nvm_size: Standard_ND96asr\n"));
        QVERIFY(writeText(path("badmb.yaml"), "version: 1\nmodel: Llama-3-8B\nmicro_batch: -3\n"));
        QVERIFY(writeText(path("badrun.yaml"), "modle: ./model\ndata:\n  train: t.jsonl\n"));
        for (QString& arg : args) {
            arg.replace("PLAN", m_plan);
            arg.replace("DIR", m_dir.path());
        }
        const Outcome r = runCli(args);
        QCOMPARE(r.exitCode, 2);
        for (const QString& part : parts)
            QVERIFY2(r.err.contains(part), qPrintable(part + "\n---\n" + r.err));
        QVERIFY(r.out.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestExportCli)
#include "test_export_cli.moc"
