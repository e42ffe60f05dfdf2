// `tunebench-cli plan --from-run`: a run config planned as our trainer runs
// it (engine tunebench, the device it names), and with the run's own data,
// read and batched as the trainer batches it.
#include "plan_cli_fixture.h"

#include "common/atomic_file.h"

#include <nlohmann/json.hpp>

class TestPlanFromRun : public tb::test::PlanCliFixture {
    Q_OBJECT

private slots:
    // A run config planned as our trainer runs it: its model, method and
    // batch, engine tunebench with every phase; a CPU run on this CPU, a
    // CUDA run on the plan's GPU; plan options beside it win.
    void plansARunConfig_data()
    {
        QTest::addColumn<QString>("device");
        QTest::addColumn<QStringList>("hardware");
        QTest::addColumn<QString>("expectedGpu");
        QTest::addRow("cpu") << "cpu" << QStringList{} << "cpu";
        QTest::addRow("cuda") << "cuda" << QStringList{"--vm", "Standard_ND96amsr_A100_v4"}
                              << "A100-80GB-SXM";
    }
    void plansARunConfig()
    {
        QFETCH(QString, device);
        QFETCH(QStringList, hardware);
        QFETCH(QString, expectedGpu);
        QTemporaryDir dir;
        const QString path = dir.filePath("run.yaml");
        const std::string yaml = "model: " + tb::test::sourcePath("resources/demo/stories260K")
            + "\nmethod: full\nprecision: fp32\ndevice: " + device.toStdString()
            + "\ndata:\n  train: " + tb::test::sourcePath("resources/demo/tiny_instructions.jsonl")
            + "\n"
              "  sequence_length: 128\ntraining:\n  micro_batch: 3\n  grad_accum: 2\n"
              "distributed:\n  sharding: zero3\n";
        QVERIFY(tb::common::writeFileAtomic(path.toStdString(), yaml).ok());
        const Run r =
            plan(QStringList{"--from-run", path, "--gpus-per-node", "2", "--json"} + hardware);
        QCOMPARE(r.exitCode, 0);
        const nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
        QCOMPARE(j["engine"].get<std::string>(), std::string("tunebench"));
        QCOMPARE(j["gpu"].get<std::string>(), expectedGpu.toStdString());
        QCOMPARE(j["method"].get<std::string>(), std::string("full"));
        QCOMPARE(j["precision"].get<std::string>(), std::string("fp32"));
        QCOMPARE(j["sharding"].get<std::string>(), std::string("zero3"));
        QCOMPARE(j["micro_batch"].get<int>(), 3);
        QCOMPARE(j["grad_accum"].get<int>(), 2);
        QCOMPARE(j["seq_len"].get<int>(), 128);
        QCOMPARE(j["world_size"].get<int>(), 2);
        QCOMPARE(j["params_total"].get<long long>(), 260032LL);
        QCOMPARE(j["phases"].size(), size_t(5));

        const Run missing = plan({"--from-run", dir.filePath("nothing.yaml")});
        QCOMPARE(missing.exitCode, 2);
        QVERIFY2(missing.err.contains("nothing.yaml"), qPrintable(missing.err));
    }

    // The run's own data sets the activation peak (its longest padded row)
    // and the tokens to train (its padded batches x epochs); --nominal-data
    // plans the dataset options instead, and a dataset option beside
    // --from-run without it is refused rather than ignored.
    void plansTheRunsOwnData()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath("run.yaml");
        const std::string yaml = "model: " + tb::test::sourcePath("resources/demo/stories260K")
            + "\nmethod: lora\nprecision: fp32\ndevice: cpu\n"
              "data:\n  train: "
            + tb::test::sourcePath("resources/demo/tiny_instructions.jsonl")
            + "\n  sequence_length: 512\n  packing: false\n"
              "training:\n  micro_batch: 4\n  epochs: 2\n";
        QVERIFY(tb::common::writeFileAtomic(path.toStdString(), yaml).ok());
        const Run measured = plan({"--from-run", path, "--json", "--explain"});
        QCOMPARE(measured.exitCode, 0);
        const nlohmann::json j = nlohmann::json::parse(measured.out.toStdString());
        const nlohmann::json& data = j["data"];
        QCOMPARE(data["rows"].get<long long>(), 64LL); // one example a row, one rank
        QCOMPARE(data["micro_batches"].get<long long>(), 16LL);
        const int longest = data["longest_row"].get<int>();
        QVERIFY2(longest > 16 && longest < 512, qPrintable(QString::number(longest)));
        QVERIFY(data["batch_tokens"].get<long long>() >= data["tokens"].get<long long>());
        QVERIFY(data["batch_tokens"].get<long long>() <= 64LL * longest);
        QCOMPARE(j["training_tokens"].get<double>(), 2.0 * data["batch_tokens"].get<double>());

        // The same plan with seq_len set to the longest row holds the same activations.
        const Run nominal = plan({"--from-run", path, "--nominal-data", "--seq-len",
            QString::number(longest), "--json"});
        QCOMPARE(nominal.exitCode, 0);
        const nlohmann::json n = nlohmann::json::parse(nominal.out.toStdString());
        QVERIFY(n["data"].is_null());
        for (const char* category : {"activations", "logits"})
            QCOMPARE(j["per_gpu_bytes"][category].get<long long>(),
                n["per_gpu_bytes"][category].get<long long>());

        const Run both = plan({"--from-run", path, "--dataset-samples", "5"});
        QCOMPARE(both.exitCode, 2);
        QVERIFY2(both.err.contains("--dataset-samples") && both.err.contains("--nominal-data"),
            qPrintable(both.err));
        const Run alone = plan({"--nominal-data"});
        QCOMPARE(alone.exitCode, 2);
        QVERIFY2(alone.err.contains("--from-run"), qPrintable(alone.err));
    }
};

QTEST_GUILESS_MAIN(TestPlanFromRun)
#include "test_plan_from_run.moc"
