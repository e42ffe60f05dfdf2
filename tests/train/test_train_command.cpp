#include "../support/model_variants.h"
#include "../support/qt_test_paths.h"
#include "../support/skip.h"
#include "../support/write_or_stop.h"
#include "common/atomic_file.h"
#include "common/build_info.h"
#include "run_events.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"
#include "train_command_runs.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <unistd.h>

// tunebench-cli train as a user (or a launcher) runs it: every recipe end to
// end, the threads a launcher gives, an adapter continued, and refusals of
// bad input (checkpoints and resumes: test_checkpoint_resume). Each run uses one thread so that a
// loaded CI machine does not turn OpenMP's spinning into minutes.

using namespace tb::testutil::train_command;

class TestTrainCommand : public QObject {
    Q_OBJECT

private slots:
    void recipeRunsEndToEnd_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<bool>("adapter");
        QTest::addColumn<bool>("merged");
        QTest::addRow("full") << "full" << false << true;
        QTest::addRow("lora") << "lora" << true << false;
        QTest::addRow("qlora") << "qlora" << true << true;
    }

    void recipeRunsEndToEnd()
    {
        QFETCH(QString, recipe);
        QFETCH(bool, adapter);
        QFETCH(bool, merged);
        QTemporaryDir dir;
        const std::string runDir = dir.filePath("run").toStdString();
        const Run run = cli({"train", tb::test::qSourcePath("presets/recipes/") + recipe + ".yaml",
            "--output", QString::fromStdString(runDir), "--max-steps", "2", "--threads", "1"});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY(run.out.contains("status      completed"));
        QVERIFY2(run.err.contains("step    2/2  loss "), qPrintable(run.err));
        const auto all = events(runDir);
        QCOMPARE(ofType(all, "run_start").size(), size_t(1));
        // The recipes say device: auto, which is the CPU on a machine without a GPU.
        QCOMPARE(ofType(all, "run_start").front()["device"].get<std::string>(), std::string("cpu"));
        const auto steps = ofType(all, "step");
        QCOMPARE(steps.size(), size_t(2));
        for (const char* field : {"loss", "lr", "grad_norm", "tokens", "samples", "step_seconds",
                 "tokens_per_second", "mem_allocated_bytes", "mem_peak_bytes"})
            QVERIFY2(steps.back().contains(field), field);
        QVERIFY(steps.back()["mem_peak_bytes"].get<double>()
            >= steps.back()["mem_allocated_bytes"].get<double>());
        QVERIFY(!steps.back().contains("mem_reserved_bytes")); // a GPU allocator's figure
        QCOMPARE(steps.back()["state_bytes"]["master_on_host"].get<bool>(), false);
        QVERIFY(ofType(all, "eval").size() >= 2); // before and after
        QCOMPARE(ofType(all, "checkpoint").size(), size_t(1));
        QCOMPARE(all.back()["type"].get<std::string>(), std::string("run_end"));
        QCOMPARE(all.back()["status"].get<std::string>(), std::string("completed"));
        QVERIFY(fs::exists(runDir + "/config.yaml"));
        QVERIFY(fs::exists(runDir + "/checkpoints/step-00000002/trainer_state.json"));
        QCOMPARE(fs::exists(runDir + "/adapter/adapter_model.safetensors"), adapter);
        QCOMPARE(fs::exists(runDir + "/adapter/adapter_config.json"), adapter);
        QCOMPARE(fs::exists(runDir + "/merged/model.safetensors"), merged);
        QCOMPARE(fs::exists(runDir + "/merged/tokenizer.json"), merged);
        QCOMPARE(fs::exists(runDir + "/merged/config.json"), merged);
    }

    // Without --threads a rank keeps the intra-op threads its launcher gave
    // it in OMP_NUM_THREADS (run_start records them); a bad value is refused.
    void threadsFollowTheLauncher_data()
    {
        QTest::addColumn<QString>("omp");
        QTest::addColumn<int>("expected"); // -1: refused with exit status 2
        QTest::addRow("one thread") << "1" << 1;
        QTest::addRow("two threads") << "2" << 2;
        QTest::addRow("nested list") << "2,1" << 2;
        QTest::addRow("not a number") << "many" << -1;
    }

    void threadsFollowTheLauncher()
    {
        QFETCH(QString, omp);
        QFETCH(int, expected);
        QTemporaryDir dir;
        const std::string config =
            writeConfig(dir, "run", "method: lora\ntraining: {max_steps: 1, micro_batch: 2}\n");
        const std::string runDir = dir.filePath("run").toStdString();
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert("OMP_NUM_THREADS", omp);
        const Run run = cli({"train", QString::fromStdString(config), "--output",
                                QString::fromStdString(runDir), "--quiet"},
            240000, environment);
        if (expected < 0) {
            QCOMPARE(run.exitCode, 2);
            QVERIFY2(run.err.contains("OMP_NUM_THREADS: got 'many'"), qPrintable(run.err));
            return;
        }
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QCOMPARE(ofType(events(runDir), "run_start").front()["threads"].get<int>(), expected);
    }

    void anAdapterContinuesWhereItsRunEnded()
    {
        QTemporaryDir dir;
        const std::string config = writeConfig(dir, "lora",
            "method: lora\nlora: {rank: 4, dropout: 0.0}\ntraining: {max_steps: 3, micro_batch: 4,"
            " learning_rate: 3e-3}\n");
        const std::string first = dir.filePath("first").toStdString();
        const std::string second = dir.filePath("second").toStdString();
        QCOMPARE(cli({"train", QString::fromStdString(config), "--output",
                         QString::fromStdString(first), "--threads", "1", "--quiet"})
                     .exitCode,
            0);
        const Run run = cli({"train", QString::fromStdString(config), "--output",
            QString::fromStdString(second), "--threads", "1", "--quiet", "--init-adapter",
            QString::fromStdString(first + "/adapter")});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        const double ended = ofType(events(first), "eval").back()["loss"].get<double>();
        const double started = ofType(events(second), "eval").front()["loss"].get<double>();
        QCOMPARE(started, ended);
        QVERIFY(ended < ofType(events(first), "eval").front()["loss"].get<double>());
    }

    // LoRA on a mixture of experts adapts the attention projections: the
    // default targets' MLP names select experts, which the run says in a
    // warning and leaves out of the adapter's target_modules; MLP names
    // alone adapt nothing and are refused.
    void aMixtureOfExpertsAdaptsAttentionAndSaysSo()
    {
        QTemporaryDir dir;
        const std::string model =
            tb::test::writeMixtralCopy(kModel, dir.filePath("mixtral").toStdString());
        const auto configWith = [&](const std::string& name, const std::string& lora) {
            const std::string path =
                dir.filePath(QString::fromStdString(name + ".yaml")).toStdString();
            tb::test::writeOrStop(path,
                "model: " + model + "\ndata:\n  train: " + kDemo
                    + "\n  sequence_length: 128\n  validation_split: 0.1\nmethod: lora\n" + lora
                    + "training: {max_steps: 1, micro_batch: 2}\n");
            return QString::fromStdString(path);
        };
        const std::string runDir = dir.filePath("run").toStdString();
        const Run run = cli({"train", configWith("default", ""), "--output",
            QString::fromStdString(runDir), "--threads", "1", "--quiet"});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        const auto warnings = ofType(events(runDir), "warning");
        QVERIFY2(std::any_of(warnings.begin(), warnings.end(),
                     [](const json& w) {
                         return w.value("message", "")
                                    .find("gate_proj, up_proj, down_proj select the experts")
                             != std::string::npos;
                     }),
            "no warning names the expert targets left out");
        // The routing's balance: 5 layers of 4 experts, every position
        // counted for each of its 2 experts, the same total in each layer.
        const json step = ofType(events(runDir), "step").front();
        const auto routed = step.at("expert_tokens").get<std::vector<std::vector<std::int64_t>>>();
        QCOMPARE(routed.size(), size_t(5));
        const std::int64_t total =
            std::accumulate(routed[0].begin(), routed[0].end(), std::int64_t(0));
        QVERIFY2(total >= 2 * step.at("tokens").get<std::int64_t>() && total % 2 == 0,
            qPrintable(QString::fromStdString(step.dump())));
        for (const auto& layer : routed) {
            QCOMPARE(layer.size(), size_t(4));
            QCOMPARE(std::accumulate(layer.begin(), layer.end(), std::int64_t(0)), total);
        }
        std::ifstream adapterConfig(runDir + "/adapter/adapter_config.json");
        const json adapter = json::parse(adapterConfig);
        std::vector<std::string> targets = adapter.at("target_modules");
        std::sort(targets.begin(), targets.end());
        QCOMPARE(targets, (std::vector<std::string>{"k_proj", "o_proj", "q_proj", "v_proj"}));

        const Run refused =
            cli({"train", configWith("experts", "lora: {target_modules: [gate_proj]}\n"),
                "--output", dir.filePath("refused"), "--threads", "1", "--quiet"});
        QVERIFY(refused.exitCode != 0);
        QVERIFY2(refused.err.contains("select only the experts"), qPrintable(refused.err));
    }

    // The run folder on a small tmpfs that is full but for the one page the
    // saved config.yaml takes: the first event cannot be written. The run
    // must end at once, failed, saying why on stderr, and never hang.
    void aRunThatCannotWriteItsEventsFails()
    {
        if (::geteuid() != 0)
            TB_SKIP(
                QStringLiteral("mounting a tmpfs for the run folder needs root (CI runs as root)"));
        QTemporaryDir dir;
        const std::string config = writeConfig(dir, "lora", "method: lora\n");
        const QString mount = dir.filePath("small");
        QVERIFY(QDir().mkpath(mount));
        const QString script =
            "mount -t tmpfs -o size=256k tmpfs \"$1\" || exit 99; "
            "dd if=/dev/zero of=\"$1/fill\" bs=4k 2>/dev/null; "
            "truncate -s -4096 \"$1/fill\"; "
            "exec \"$2\" train \"$3\" --output \"$1/run\" --max-steps 2 --threads 1";
        QProcess process;
        process.start("unshare",
            {"--mount", "--propagation", "private", "sh", "-c", script, "sh", mount, kCli,
                QString::fromStdString(config)});
        QVERIFY(process.waitForFinished(120000));
        const QString err = QString::fromUtf8(process.readAllStandardError());
        QVERIFY2(process.exitCode() != 99, qPrintable("could not mount a tmpfs: " + err));
        QCOMPARE(process.exitCode(), 1);
        QVERIFY2(err.contains("cannot write the run's events"), qPrintable(err));
        QVERIFY2(err.contains("No space left on device"), qPrintable(err));
    }

    void badInputExitsWithUsageStatus_data()
    {
        QTest::addColumn<QString>("yaml");
        QTest::addColumn<QString>("expected");
        QTest::addRow("negative learning rate") << QString::fromStdString("model: " + kModel
            + "\ndata: {train: " + kDemo + "}\ntraining: {learning_rate: -0.1}\n")
                                                << "training.learning_rate";
        QTest::addRow("unknown key") << QString::fromStdString(
            "model: " + kModel + "\ndata: {train: " + kDemo + "}\ntraning: {epochs: 1}\n")
                                     << "traning";
        QTest::addRow("missing model folder")
            << QString::fromStdString("model: /nonexistent/model\ndata: {train: " + kDemo + "}\n")
            << "/nonexistent/model";
        // Offload moves states off a GPU: on the CPU it is refused, never ignored.
        QTest::addRow("offload on the cpu")
            << QString::fromStdString("model: " + kModel + "\ndata: {train: " + kDemo
                   + "}\ndevice: cpu\n"
                     "distributed: {sharding: zero2, offload: optimizer}\n")
            << "distributed.offload";
        // This machine has no GPU (the tests run on the CPU wheel).
        QTest::addRow("cuda without a gpu") << QString::fromStdString(
            "model: " + kModel + "\ndata: {train: " + kDemo + "}\ndevice: cuda\n")
                                            << "cuda was asked for, but LibTorch";
    }

    void badInputExitsWithUsageStatus()
    {
        QFETCH(QString, yaml);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const QString path = dir.filePath("bad.yaml");
        QVERIFY(tb::common::writeFileAtomic(path.toStdString(), yaml.toStdString()).ok());
        const Run run = cli({"train", path, "--output", dir.filePath("run")});
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.err.contains(expected), qPrintable(run.err));
        QVERIFY(!fs::exists(dir.filePath("run").toStdString() + "/events.jsonl"));
    }

    // --device replaces the run config's device (the exports pass --device
    // cuda to every rank of a GPU job): on this CPU build a config that says
    // cpu is refused for cuda, which proves the option reached the trainer.
    void deviceOptionReplacesTheConfigs_data()
    {
        QTest::addColumn<QString>("device");
        QTest::addColumn<QString>("expected");
        QTest::addRow("unknown") << "gpu"
                                 << "--device: got 'gpu', expected cpu, cuda or auto";
        QTest::addRow("cuda on the CPU build") << "cuda"
                                               << "device: cuda was asked for";
    }
    void deviceOptionReplacesTheConfigs()
    {
        QFETCH(QString, device);
        QFETCH(QString, expected);
        if (device == "cuda" && std::string(tb::common::buildinfo::kLibTorchFlavour) == "cuda")
            TB_SKIP(QStringLiteral("the CUDA build would train on the GPU here"));
        QTemporaryDir dir;
        const QString path = dir.filePath("cpu.yaml");
        QVERIFY(tb::common::writeFileAtomic(path.toStdString(),
            "model: " + kModel + "\ndata: {train: " + kDemo + "}\ndevice: cpu\n")
                    .ok());
        const Run run = cli({"train", path, "--output", dir.filePath("run"), "--device", device});
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.err.contains(expected), qPrintable(run.err));
    }
};

QTEST_GUILESS_MAIN(TestTrainCommand)
#include "test_train_command.moc"
