// Checkpoints of `tunebench-cli train` as a user meets them: resumed
// bit-identically after SIGKILL, written on SIGTERM, resumed across device
// types, and resumed from an older one without losing the new timeline.
// One thread per run, as in test_train_command.
#include "train_command_runs.h"

#include "common/atomic_file.h"
#include "train/staging_directory.h"

#include <QTest>

#include <algorithm>
#include <csignal>
#include <unistd.h>

using namespace tb::testutil::train_command;

class TestCheckpointResume : public QObject {
    Q_OBJECT

private slots:
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
        const Run first =
            cli(QStringList{"train", QString::fromStdString(config), "--quiet"} + common);
        QVERIFY2(first.exitCode == 0, qPrintable(first.err));
        const std::string checkpoint = runDir + "/checkpoints/step-00000002";
        const QString rewritten =
            makeRankFileLookCuda(checkpoint + "/rank-00000.safetensors", deviceMetadata);
        QVERIFY2(rewritten.isEmpty(), qPrintable(rewritten));
        fs::remove_all(runDir + "/adapter");

        const Run exported =
            cli(QStringList{"train", QString::fromStdString(config), "--resume-from",
                    QString::fromStdString(checkpoint), "--export-only", "--quiet"}
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
        const Run first =
            cli(QStringList{"train", QString::fromStdString(config), "--quiet"} + common);
        QVERIFY2(first.exitCode == 0, qPrintable(first.err));
        QVERIFY(fs::exists(checkpoints + "/step-00000004"));

        // The timeline from step 2 to 3, keeping one checkpoint.
        const std::string keepOne = writeConfig(dir, "keep-one",
            "method: lora\ntraining: {max_steps: 3, micro_batch: 2}\n"
            "output: {checkpoint_every: 1, keep_last: 1}\n");
        const Run branch =
            cli(QStringList{"train", QString::fromStdString(keepOne), "--resume-from",
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

    // A folder replaced by a finished one (an export, a checkpoint written
    // again at its step) swaps in one step: the final name always holds one
    // of the two. A commit that could only move the old folder aside and
    // died before the rename gets it put back at the next start.
    void replacingAFolderNeverLeavesItMissing()
    {
        QTemporaryDir dir;
        const std::string finalDir = dir.filePath("adapter").toStdString();
        QVERIFY(fs::create_directory(finalDir));
        QVERIFY(tb::common::writeFileAtomic(finalDir + "/weights", "old").ok());
        auto created = tb::train::StagingDirectory::create(finalDir);
        QVERIFY(created.ok());
        tb::train::StagingDirectory staging = std::move(created).value();
        QVERIFY(tb::common::writeFileAtomic(staging.path() + "/weights", "new").ok());
        QVERIFY(staging.commit().ok());
        QCOMPARE(*tb::common::readFile(finalDir + "/weights"), std::string("new"));
        QCOMPARE(std::distance(
                     fs::directory_iterator(dir.path().toStdString()), fs::directory_iterator()),
            std::ptrdiff_t(1)); // the old one swapped out and removed

        // The window a two-rename commit has: the old folder aside, the new
        // one unfinished.
        const std::string aside = dir.filePath(".adapter.tmp-999-old").toStdString();
        fs::rename(finalDir, aside);
        QVERIFY(fs::create_directory(dir.filePath(".adapter.tmp-999").toStdString()));
        const std::vector<std::string> restored =
            tb::train::removeStaleStagingDirectories(dir.path().toStdString());
        QCOMPARE(restored, std::vector<std::string>{finalDir});
        QCOMPARE(*tb::common::readFile(finalDir + "/weights"), std::string("new"));
        QVERIFY(!fs::exists(aside));
        QVERIFY(!fs::exists(dir.filePath(".adapter.tmp-999").toStdString()));

        // With the final folder in place, a folder left aside is only stale.
        QVERIFY(fs::create_directory(aside));
        QVERIFY(tb::train::removeStaleStagingDirectories(dir.path().toStdString()).empty());
        QVERIFY(!fs::exists(aside));
        QCOMPARE(*tb::common::readFile(finalDir + "/weights"), std::string("new"));
    }
};

QTEST_GUILESS_MAIN(TestCheckpointResume)
#include "test_checkpoint_resume.moc"
