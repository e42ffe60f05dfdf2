#include "export_tools.h"

#include <QtTest>

#include <QTemporaryDir>

// The exported Azure ML command jobs and accelerate configs loaded by the
// tools' own loaders (azure-ai-ml's load_job, offline and schema-checked;
// accelerate's load_config_from_file), which must read back the job the
// plan describes. test_export_runs runs the accelerate config.
using namespace tb::testutil;
using namespace tb::testutil::exports;
using nlohmann::json;

class TestExportLoaders : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_plan;
    QString m_config;

    // Exports to a file and loads it with `tool`'s loader.
    json exportAndLoad(const QString& format, const QString& tool, const QStringList& arguments)
    {
        const QString out = m_dir.filePath(format + ".yaml");
        QFile::remove(out);
        const Ended exported = exportJob(
            format, QStringList{"--plan", m_plan, "--config", m_config, "--out", out} + arguments);
        if (!exported.succeeded()) {
            qWarning().noquote() << describe({exported});
            return {};
        }
        QString problem;
        const json loaded = loadWithTool(tool, out, &problem);
        if (!problem.isEmpty())
            qWarning().noquote() << problem;
        return loaded;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_plan = m_dir.filePath("plan.yaml");
        m_config = m_dir.filePath("run.yaml");
        // Standard_ND96amsr_A100_v4: 8 x A100 80GB, 96 vCPUs.
        QVERIFY(tb::common::writeFileAtomic(m_plan.toStdString(),
            "version: 1\nmodel: Llama-3.1-8B\nmethod: lora\nsharding: fsdp-full\n"
            "vm_size: Standard_ND96amsr_A100_v4\ngpus_per_node: 0\nnodes: 2\n"));
        QVERIFY(tb::common::writeFileAtomic(m_config.toStdString(),
            "name: llama-sft\nmodel: ./model\ndevice: cuda\nprecision: bf16-mixed\n"
            "data:\n  train: train.jsonl\n"));
    }

    void cleanupTestCase() { stopLoaderServer(); }

    void azureMlLoads_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("processesPerNode");
        QTest::addColumn<QString>("image"); // empty: the registered environment
        QTest::addColumn<QString>("compute"); // empty: serverless
        QTest::addColumn<QString>("command");
        QTest::addRow("one node, launcher, registered environment")
            << QStringList{"--nodes", "1", "--cluster", "a100"} << 1 << 1 << ""
            << "a100"
            << "tunebench-cli launch run.yaml --nproc 8 -- --device cuda";
        QTest::addRow("two nodes, launcher, image, serverless")
            << QStringList{"--image", "example.azurecr.io/tunebench:0.1"} << 2 << 1
            << "example.azurecr.io/tunebench:0.1"
            << ""
            << "tunebench-cli launch run.yaml --nproc 8 --nnodes 2 --node-rank $NODE_RANK "
               "--master-addr $MASTER_ADDR --master-port $MASTER_PORT -- --device cuda";
        QTest::addRow("two nodes, process per GPU, image, cluster")
            << QStringList{"--per-gpu", "--image", "example.azurecr.io/tunebench:0.1", "--cluster",
                   "a100"}
            << 2 << 8 << "example.azurecr.io/tunebench:0.1"
            << "a100"
            << "tunebench-cli train run.yaml --device cuda";
    }
    void azureMlLoads()
    {
        QFETCH(QStringList, arguments);
        QFETCH(int, nodes);
        QFETCH(int, processesPerNode);
        QFETCH(QString, image);
        QFETCH(QString, compute);
        QFETCH(QString, command);
        const json job = exportAndLoad("azureml", "azureml", arguments);
        QVERIFY(job.is_object());
        QCOMPARE(job["class"].get<std::string>(), std::string("Command"));
        QCOMPARE(job["display_name"].get<std::string>(), std::string("llama-sft"));
        QCOMPARE(job["instance_count"].get<int>(), nodes);
        QCOMPARE(job["instance_type"].get<std::string>(), std::string("Standard_ND96amsr_A100_v4"));
        QCOMPARE(job["distribution"].get<std::string>(), std::string("pytorch"));
        QCOMPARE(job["process_count_per_instance"].get<int>(), processesPerNode);
        QCOMPARE(QString::fromStdString(job["command"].get<std::string>()), command);
        QCOMPARE(QString::fromStdString(job["code"].get<std::string>()), m_dir.path());
        if (image.isEmpty()) {
            // The SDK reads azureml:<name>@<label> as a registered environment's reference.
            QCOMPARE(job["environment"].get<std::string>(), std::string("tunebench@latest"));
        } else {
            QVERIFY(job["environment"].is_null());
            QCOMPARE(QString::fromStdString(job["image"].get<std::string>()), image);
        }
        if (compute.isEmpty())
            QVERIFY(job["compute"].is_null());
        else
            QCOMPARE(QString::fromStdString(job["compute"].get<std::string>()), compute);
        if (processesPerNode > 1)
            QCOMPARE(job["environment_variables"]["LOCAL_WORLD_SIZE"].get<std::string>(),
                std::string("8"));
    }

    // The loader is strict: the same file with one value of the wrong type
    // is refused, so the rows above prove the schema accepted the export.
    void azureMlLoaderRefusesASchemaError()
    {
        const QString out = m_dir.filePath("broken.yaml");
        QVERIFY(exportJob("azureml", {"--plan", m_plan, "--config", m_config, "--out", out})
                    .succeeded());
        QFile file(out);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QByteArray text = file.readAll();
        file.close();
        QVERIFY(text.contains("instance_count: 2"));
        text.replace("instance_count: 2", "instance_count: two");
        QVERIFY(tb::common::writeFileAtomic(out.toStdString(), text.toStdString()));
        QString problem;
        loadWithTool("azureml", out, &problem);
        QVERIFY2(problem.contains("instance_count"), qPrintable(problem));
    }

    void accelerateLoads_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<int>("machines");
        QTest::addColumn<int>("processes");
        QTest::addColumn<QString>("mainIp"); // empty: none written
        QTest::addRow("one node") << QStringList{"--nodes", "1"} << 1 << 8 << "";
        QTest::addRow("two nodes, master address") << QStringList{"--master-addr", "10.0.0.4",
            "--master-port", "29600"} << 2 << 16 << "10.0.0.4";
        QTest::addRow("one GPU") << QStringList{"--nodes", "1", "--gpus-per-node", "1"} << 1 << 1
                                 << "";
    }
    void accelerateLoads()
    {
        QFETCH(QStringList, arguments);
        QFETCH(int, machines);
        QFETCH(int, processes);
        QFETCH(QString, mainIp);
        const json config = exportAndLoad("accelerate", "accelerate", arguments);
        QVERIFY(config.is_object());
        QCOMPARE(config["class"].get<std::string>(), std::string("ClusterConfig"));
        QCOMPARE(config["compute_environment"].get<std::string>(), std::string("LOCAL_MACHINE"));
        QCOMPARE(config["distributed_type"].get<std::string>(),
            std::string(processes > 1 ? "MULTI_GPU" : "NO"));
        QCOMPARE(config["num_machines"].get<int>(), machines);
        QCOMPARE(config["num_processes"].get<int>(), processes);
        QCOMPARE(config["machine_rank"].get<int>(), 0);
        QCOMPARE(
            config["main_process_port"].get<int>(), arguments.contains("29600") ? 29600 : 29500);
        if (mainIp.isEmpty())
            QVERIFY(config["main_process_ip"].is_null());
        else
            QCOMPARE(QString::fromStdString(config["main_process_ip"].get<std::string>()), mainIp);
        // Nothing the trainer takes from the run config pretends to be set here.
        QCOMPARE(config["mixed_precision"].get<std::string>(), std::string("no"));
        QVERIFY(config["deepspeed_config"].empty());
        QVERIFY(config["fsdp_config"].empty());
        QCOMPARE(config["use_cpu"].get<bool>(), false);
    }
};

QTEST_GUILESS_MAIN(TestExportLoaders)
#include "test_export_loaders.moc"
