#include "../support/write_or_stop.h"
#include "../support/skip.h"
#include "../support/test_data.h"
#include "common/atomic_file.h"
#include "common/build_info.h"
#include "run_events.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <unistd.h>

// tunebench-cli train as a user (or a launcher) runs it: every recipe end to
// end, bit-identical resume after SIGKILL, graceful stop on SIGTERM, and
// refusals of bad input. Each run uses one thread so that a loaded CI
// machine does not turn OpenMP's spinning into minutes.
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const QString kCli = TB_BINARY_DIR "/app/cli/tunebench-cli";
const std::string kModel = TB_DEMO_MODEL_DIR;
const std::string kDemo = TB_SOURCE_DIR "/resources/demo/tiny_instructions.jsonl";

struct Run {
    int exitCode = -1;
    QString out;
    QString err;
};

Run cli(const QStringList& arguments, int timeoutMs = 240000,
    const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment())
{
    QProcess process;
    process.setProcessEnvironment(environment);
    process.start(kCli, arguments);
    if (!process.waitForFinished(timeoutMs))
        process.kill();
    process.waitForFinished();
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
        QString::fromUtf8(process.readAllStandardOutput()),
        QString::fromUtf8(process.readAllStandardError())};
}

std::vector<json> events(const std::string& runDir)
{
    return tb::testutil::readEventFile(runDir + "/events.jsonl");
}

std::vector<json> ofType(const std::vector<json>& all, const std::string& type)
{
    return tb::testutil::eventsOfType(all, type);
}

std::string bytesOf(const std::string& path)
{
    const auto content = tb::common::readFile(path);
    return content ? *content : std::string();
}

int countFolders(const std::string& dir)
{
    int count = 0;
    for (const auto& entry : fs::directory_iterator(dir))
        count += entry.is_directory() ? 1 : 0;
    return count;
}

// A LoRA or full run config on stories260K and the demo instructions.
std::string writeConfig(const QTemporaryDir& dir, const std::string& name, const std::string& body)
{
    const std::string path = dir.filePath(QString::fromStdString(name + ".yaml")).toStdString();
    const std::string text = "model: " + kModel + "\ndata:\n  train: " + kDemo
        + "\n  sequence_length: 128\n  validation_split: 0.1\n" + body;
    tb::test::writeOrStop(path, text);
    return path;
}

// Waits until the run's events hold an event matching `test`.
bool waitForEvent(const std::string& runDir, const std::function<bool(const json&)>& test,
    QProcess& process, int timeoutMs = 120000)
{
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < timeoutMs && process.state() != QProcess::NotRunning) {
        for (const json& event : events(runDir)) {
            if (test(event))
                return true;
        }
        QTest::qWait(10);
    }
    return false;
}

// Rewrites a checkpoint's rank file as a GPU run writes it: rng.dropout holds
// a CUDA generator's 16-byte state (seed and offset), and the metadata names
// the device, or says nothing as in files from before it was recorded.
QString makeRankFileLookCuda(const std::string& path, const QString& deviceMetadata)
{
    namespace st = tb::safetensors;
    auto file = st::SafetensorsFile::open(path);
    if (!file)
        return QString::fromStdString(file.error().toString());
    std::vector<std::vector<std::byte>> contents;
    std::vector<st::TensorToWrite> tensors;
    const std::vector<std::byte> cudaState(16, std::byte{7});
    for (const st::TensorInfo& info : file->tensors()) {
        if (info.name == "rng.dropout") {
            tensors.push_back({info.name, st::DType::U8, {16}, cudaState});
            continue;
        }
        auto bytes = file->readBytes(info.name);
        if (!bytes)
            return QString::fromStdString(bytes.error().toString());
        contents.push_back(std::move(bytes).value());
        tensors.push_back({info.name, info.dtype, info.shape, contents.back()});
    }
    std::map<std::string, std::string> metadata = file->metadata();
    metadata.erase("rng.dropout.device");
    if (!deviceMetadata.isEmpty())
        metadata["rng.dropout.device"] = deviceMetadata.toStdString();
    const auto written = st::writeSafetensors(path, tensors, metadata);
    return written ? QString() : QString::fromStdString(written.error().toString());
}

} // namespace

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
        const Run run = cli({"train", TB_SOURCE_DIR "/presets/recipes/" + recipe + ".yaml",
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

    void sigkillThenResumeIsBitIdentical_data()
    {
        QTest::addColumn<QString>("settings");
        QTest::addRow("lora, dropout, fp32") << "method: lora\nlora: {rank: 4, dropout: 0.2}\n";
        QTest::addRow("full, bf16-mixed, checkpointing")
            << "method: full\nprecision: bf16-mixed\nactivation_checkpointing: true\n";
    }

    void sigkillThenResumeIsBitIdentical()
    {
        QFETCH(QString, settings);
        QTemporaryDir dir;
        const std::string config = writeConfig(dir, "run",
            settings.toStdString()
                + "training: {max_steps: 12, micro_batch: 4, grad_accum: 2, learning_rate: 1e-3,"
                  " warmup_steps: 2, weight_decay: 0.01}\noutput: {checkpoint_every: 2, keep_last: "
                  "2}\n");
        const std::string straight = dir.filePath("straight").toStdString();
        const std::string killed = dir.filePath("killed").toStdString();
        const QString threads = "1";

        const Run reference = cli({"train", QString::fromStdString(config), "--output",
            QString::fromStdString(straight), "--threads", threads, "--quiet"});
        QVERIFY2(reference.exitCode == 0, qPrintable(reference.err));

        QProcess victim;
        victim.start(kCli,
            {"train", QString::fromStdString(config), "--output", QString::fromStdString(killed),
                "--threads", threads, "--quiet"});
        QVERIFY(waitForEvent(
            killed,
            [](const json& e) {
                return e.value("type", "") == "checkpoint" && e.value("step", 0) == 4;
            },
            victim));
        ::kill(static_cast<pid_t>(victim.processId()), SIGKILL);
        victim.waitForFinished();
        QCOMPARE(victim.exitStatus(), QProcess::CrashExit);
        QVERIFY2(ofType(events(killed), "run_end").empty(),
            "the run ended before it was killed: too fast a machine for this test's timing");

        const Run resumed = cli({"train", QString::fromStdString(config), "--output",
            QString::fromStdString(killed), "--threads", threads, "--resume"});
        QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err));
        const auto starts = ofType(events(killed), "run_start");
        QCOMPARE(starts.size(), size_t(2));
        QVERIFY(starts.back()["resumed_from_step"].get<int>() >= 4);

        // Master weights, moments and the dropout generator of the one rank.
        for (const char* file : {"rank-00000.safetensors"}) {
            const std::string a = bytesOf(straight + "/checkpoints/step-00000012/" + file);
            const std::string b = bytesOf(killed + "/checkpoints/step-00000012/" + file);
            QVERIFY(!a.empty());
            QVERIFY2(a == b, file);
        }
        // keep_last: 2 of the six checkpoints remain, the newest.
        QCOMPARE(countFolders(straight + "/checkpoints"), 2);
        QVERIFY(fs::exists(straight + "/checkpoints/step-00000010"));
        const auto lastLoss = [](const std::string& runDir) {
            return ofType(events(runDir), "step").back()["loss"].get<double>();
        };
        QCOMPARE(lastLoss(killed), lastLoss(straight));
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
        const std::string config = writeConfig(
            dir, "run", "method: lora\ntraining: {max_steps: 1, micro_batch: 2}\n");
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

    // A checkpoint written on a GPU resumes and exports on the CPU: the
    // dropout generator cannot take the other device's state, so it is
    // reseeded with a warning; the weights, moments and data position go on.
    void aGpuCheckpointResumesOnTheCpu_data()
    {
        QTest::addColumn<QString>("deviceMetadata");
        QTest::addRow("device recorded") << "cuda";
        QTest::addRow("older file, device told by the state's size") << "";
    }

    void aGpuCheckpointResumesOnTheCpu()
    {
        QFETCH(QString, deviceMetadata);
        QTemporaryDir dir;
        const std::string config = writeConfig(dir, "run",
            "method: lora\nlora: {rank: 4, dropout: 0.2}\ntraining: {max_steps: 2, micro_batch: "
            "4}\noutput: {checkpoint_every: 2}\n");
        const std::string runDir = dir.filePath("run").toStdString();
        const QStringList common{"--output", QString::fromStdString(runDir), "--threads", "1"};
        const Run first = cli(QStringList{"train", QString::fromStdString(config), "--quiet"} + common);
        QVERIFY2(first.exitCode == 0, qPrintable(first.err));
        const std::string checkpoint = runDir + "/checkpoints/step-00000002";
        const QString rewritten =
            makeRankFileLookCuda(checkpoint + "/rank-00000.safetensors", deviceMetadata);
        QVERIFY2(rewritten.isEmpty(), qPrintable(rewritten));
        fs::remove_all(runDir + "/adapter");

        const Run exported = cli(QStringList{"train", QString::fromStdString(config),
                                     "--resume-from", QString::fromStdString(checkpoint),
                                     "--export-only", "--quiet"}
            + common);
        QVERIFY2(exported.exitCode == 0, qPrintable(exported.err));
        QVERIFY(fs::exists(runDir + "/adapter/adapter_model.safetensors"));

        const Run resumed = cli(QStringList{"train", QString::fromStdString(config), "--resume",
                                    "--max-steps", "4", "--quiet"}
            + common);
        QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err));
        const auto all = events(runDir);
        const auto warnings = ofType(all, "warning");
        QVERIFY2(std::any_of(warnings.begin(), warnings.end(),
                     [](const json& w) {
                         return w.value("message", "").find("dropout is reseeded")
                             != std::string::npos;
                     }),
            "no warning says that dropout was reseeded");
        QCOMPARE(ofType(all, "run_start").back()["resumed_from_step"].get<int>(), 2);
        QCOMPARE(ofType(all, "step").back()["step"].get<int>(), 4);
        QCOMPARE(all.back()["status"].get<std::string>(), std::string("completed"));
    }

    // Resuming from a checkpoint older than the newest starts another
    // timeline: the newer checkpoints are set aside, not pruned in its place
    // nor picked by a later --resume.
    void resumingAnOlderCheckpointSetsTheNewerAside()
    {
        QTemporaryDir dir;
        const std::string config = writeConfig(dir, "run",
            "method: lora\ntraining: {max_steps: 4, micro_batch: 2}\n"
            "output: {checkpoint_every: 2, keep_last: 2}\n");
        const std::string runDir = dir.filePath("run").toStdString();
        const std::string checkpoints = runDir + "/checkpoints";
        const QStringList common{"--output", QString::fromStdString(runDir), "--threads", "1"};
        const Run first = cli(QStringList{"train", QString::fromStdString(config), "--quiet"} + common);
        QVERIFY2(first.exitCode == 0, qPrintable(first.err));
        QVERIFY(fs::exists(checkpoints + "/step-00000004"));

        // The timeline from step 2 to 3, keeping one checkpoint.
        const std::string keepOne = writeConfig(dir, "keep-one",
            "method: lora\ntraining: {max_steps: 3, micro_batch: 2}\n"
            "output: {checkpoint_every: 1, keep_last: 1}\n");
        const Run branch = cli(QStringList{"train", QString::fromStdString(keepOne),
                                   "--resume-from",
                                   QString::fromStdString(checkpoints + "/step-00000002"), "--quiet"}
            + common);
        QVERIFY2(branch.exitCode == 0, qPrintable(branch.err));
        std::vector<std::string> kept;
        std::string aside;
        for (const auto& entry : fs::directory_iterator(checkpoints)) {
            const std::string name = entry.path().filename().string();
            if (name.starts_with("abandoned-"))
                aside = entry.path().string();
            else if (name.starts_with("step-"))
                kept.push_back(name);
        }
        QCOMPARE(kept, std::vector<std::string>{"step-00000003"});
        QVERIFY2(!aside.empty() && fs::exists(aside + "/step-00000004/trainer_state.json"),
            "step 4 was not kept aside");
        const auto warnings = ofType(events(runDir), "warning");
        QVERIFY2(std::any_of(warnings.begin(), warnings.end(),
                     [&](const json& w) {
                         return w.value("message", "").find("moved to " + aside)
                             != std::string::npos;
                     }),
            "no warning says where the newer checkpoints went");

        const Run resumed = cli(QStringList{"train", QString::fromStdString(keepOne), "--resume",
                                    "--max-steps", "4", "--quiet"}
            + common);
        QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err));
        QCOMPARE(ofType(events(runDir), "run_start").back()["resumed_from_step"].get<int>(), 3);
    }

    void sigtermStopsGracefullyWithACheckpoint()
    {
        QTemporaryDir dir;
        const std::string config = writeConfig(
            dir, "long", "method: lora\ntraining: {max_steps: 100000, micro_batch: 2}\n");
        const std::string runDir = dir.filePath("run").toStdString();
        QProcess process;
        process.start(kCli,
            {"train", QString::fromStdString(config), "--output", QString::fromStdString(runDir),
                "--threads", "1", "--quiet"});
        QVERIFY(waitForEvent(
            runDir, [](const json& e) { return e.value("type", "") == "step"; }, process));
        ::kill(static_cast<pid_t>(process.processId()), SIGTERM);
        QVERIFY(process.waitForFinished(120000));
        QCOMPARE(process.exitStatus(), QProcess::NormalExit);
        QCOMPARE(process.exitCode(), 0);
        const auto all = events(runDir);
        QCOMPARE(all.back()["type"].get<std::string>(), std::string("run_end"));
        QCOMPARE(all.back()["status"].get<std::string>(), std::string("stopped"));
        const int steps = all.back()["steps"].get<int>();
        QVERIFY(steps >= 1 && steps < 100000);
        const auto checkpoints = ofType(all, "checkpoint");
        QCOMPARE(checkpoints.size(), size_t(1));
        QCOMPARE(checkpoints.back()["step"].get<int>(), steps);
        QVERIFY(fs::exists(runDir + "/" + checkpoints.back()["path"].get<std::string>()
            + "/adapter/adapter_model.safetensors"));
        QVERIFY(QString::fromUtf8(process.readAllStandardOutput()).contains("status      stopped"));

        // The folder now holds a run: starting over needs --resume (or another folder).
        const Run again = cli({"train", QString::fromStdString(config), "--output",
            QString::fromStdString(runDir), "--threads", "1"});
        QCOMPARE(again.exitCode, 2);
        QVERIFY2(again.err.contains("--resume"), qPrintable(again.err));
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
        process.start("unshare", {"--mount", "--propagation", "private", "sh", "-c", script, "sh",
                                     mount, kCli, QString::fromStdString(config)});
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
        QTest::addRow("offload on the cpu") << QString::fromStdString("model: " + kModel
            + "\ndata: {train: " + kDemo + "}\ndevice: cpu\n"
              "distributed: {sharding: zero2, offload: optimizer}\n")
                                            << "distributed.offload";
        // This machine has no GPU (the tests run on the CPU wheel).
        QTest::addRow("cuda without a gpu")
            << QString::fromStdString(
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
        QTest::addRow("unknown") << "gpu" << "--device: got 'gpu', expected cpu, cuda or auto";
        QTest::addRow("cuda on the CPU build") << "cuda" << "device: cuda was asked for";
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
