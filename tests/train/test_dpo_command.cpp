#include "train_command_runs.h"

#include <cmath>
#include <map>

// `tunebench-cli train` with objective dpo on the demo model and preference
// pairs the test writes: the run completes, every step event carries TRL's
// DPO figures under "dpo", the first step's policy equals its reference (a
// fresh adapter's B is zero) so its loss is log 2 and its rewards 0, and the
// consumers of step events (monitor --once, runs, compare) read the run.
using namespace tb::testutil::train_command;

namespace {

// Short pairs in the demo model's small-stories vocabulary, written for the
// project: the chosen completion continues the story, the rejected one
// breaks off or wanders.
const char* const kPairs =
    "{\"prompt\": \"Once upon a time there was a little cat.\", \"chosen\": \" The cat liked to "
    "play in the sun.\", \"rejected\": \" Cat cat cat.\"}"
    "\n"
    "{\"prompt\": \"Tom had a red ball.\", \"chosen\": \" He threw it to his friend and they "
    "laughed.\", \"rejected\": \" The end.\"}"
    "\n"
    "{\"prompt\": \"Lily went to the park.\", \"chosen\": \" She saw a big tree and sat under "
    "it.\", \"rejected\": \" Park park.\"}"
    "\n"
    "{\"prompt\": \"The dog was sad.\", \"chosen\": \" His mom gave him a hug and he was happy.\", "
    "\"rejected\": \" Sad sad sad.\"}"
    "\n";

double figure(const json& step, const char* name)
{
    return step.at("dpo").at(name).get<double>();
}

// A DPO run of six steps on the pairs, the rest of the config as given
// (`dataExtra` inside the data section).
std::string writeDpoConfig(const QTemporaryDir& dir, const std::string& name,
    const std::string& extra, const std::string& dataExtra = "")
{
    const std::string pairs = dir.filePath("pairs.jsonl").toStdString();
    tb::test::writeOrStop(pairs, kPairs);
    const std::string config = dir.filePath(QString::fromStdString(name + ".yaml")).toStdString();
    tb::test::writeOrStop(config,
        "model: " + kModel
            + "\nobjective: dpo\nmethod: lora\n"
              "lora:\n  rank: 4\n  alpha: 8\n  dropout: 0\n"
              "dpo:\n  beta: 0.1\n"
              "data:\n  train: "
            + pairs + "\n  format: preference\n  sequence_length: 64\n" + dataExtra
            + "training:\n  micro_batch: 2\n  max_steps: 6\n  learning_rate: 0.01\n"
              "  schedule: constant\n"
              "output:\n  dir: "
            + dir.filePath(QString::fromStdString(name)).toStdString() + "\n" + extra);
    return config;
}

// The step events by step number; a resumed run's repeat the later ones.
std::map<int, json> stepsByNumber(const std::string& runDir)
{
    std::map<int, json> steps;
    for (const json& step : ofType(events(runDir), "step"))
        steps[step.at("step").get<int>()] = step;
    return steps;
}

} // namespace

class TestDpoCommand : public QObject {
    Q_OBJECT

private slots:
    void trainsAndReports()
    {
        QTemporaryDir dir;
        const std::string config = writeDpoConfig(dir, "run", "");
        const std::string runDir = dir.filePath("run").toStdString();
        const Run run = cli({"train", QString::fromStdString(config)});
        QVERIFY2(run.exitCode == 0, qPrintable(run.out + run.err));

        const std::vector<json> all = events(runDir);
        const std::vector<json> steps = ofType(all, "step");
        QCOMPARE(steps.size(), size_t(6));
        for (const json& step : steps) {
            QCOMPARE(step.at("samples").get<int>(), 2); // pairs
            for (const char* name :
                {"rewards_chosen", "rewards_rejected", "rewards_margin", "rewards_accuracy",
                    "logps_chosen", "logps_rejected", "ref_logps_chosen", "ref_logps_rejected"})
                QVERIFY2(std::isfinite(figure(step, name)), name);
            QVERIFY(figure(step, "logps_chosen") < 0.0);
        }
        const json& first = steps.front();
        QVERIFY(std::abs(first.at("loss").get<double>() - std::log(2.0)) < 1e-6);
        QVERIFY(std::abs(figure(first, "rewards_margin")) < 1e-6);
        QVERIFY(std::abs(figure(first, "logps_chosen") - figure(first, "ref_logps_chosen")) < 1e-5);
        // Three passes over the four pairs at a high rate: the chosen
        // completions gain on the rejected ones.
        const json& last = steps.back();
        QVERIFY2(figure(last, "rewards_margin") > 0.0, last.dump().c_str());
        QVERIFY(last.at("loss").get<double>() < std::log(2.0));
        QVERIFY(fs::exists(runDir + "/adapter/adapter_model.safetensors"));

        // What reads step events still reads this run.
        const Run monitor = cli({"monitor", QString::fromStdString(runDir), "--once"});
        QVERIFY2(monitor.exitCode == 0, qPrintable(monitor.out + monitor.err));
        QVERIFY2(monitor.out.contains("step"), qPrintable(monitor.out));
        const Run runs = cli({"runs", dir.path()});
        QVERIFY2(runs.exitCode == 0, qPrintable(runs.out + runs.err));
        QVERIFY2(runs.out.contains("run"), qPrintable(runs.out));
        const Run compare = cli({"compare", QString::fromStdString(runDir)});
        QVERIFY2(compare.exitCode == 0, qPrintable(compare.out + compare.err));
    }

    // Held-out pairs are evaluated as TRL's DPOTrainer evaluates them: the
    // eval event's loss is the mean pair loss, with the pairs' figures under
    // "dpo". Before the first step the policy is its reference (B is zero):
    // log 2, rewards and margin 0, no pair won. After six steps at a high
    // rate on pairs written the same way, the held-out chosen completions
    // have gained too, and the CLI prints the figures, not a perplexity.
    void validatesOnHeldOutPairs()
    {
        QTemporaryDir dir;
        const std::string heldOut = dir.filePath("held_out.jsonl").toStdString();
        tb::test::writeOrStop(heldOut,
            "{\"prompt\": \"Ben found a small bird.\", \"chosen\": \" He gave it some water and "
            "it sang.\", \"rejected\": \" Bird bird bird.\"}\n"
            "{\"prompt\": \"Mia had a new hat.\", \"chosen\": \" She wore it to the park and "
            "smiled.\", \"rejected\": \" The end.\"}\n"
            "{\"prompt\": \"The sun was hot.\", \"chosen\": \" The kids played in the water "
            "all day.\", \"rejected\": \" Hot hot.\"}\n");
        const std::string config =
            writeDpoConfig(dir, "validated", "", "  validation_file: " + heldOut + "\n");
        const std::string runDir = dir.filePath("validated").toStdString();
        const Run run = cli({"train", QString::fromStdString(config)});
        QVERIFY2(run.exitCode == 0, qPrintable(run.out + run.err));
        const std::vector<json> evals = ofType(events(runDir), "eval");
        QVERIFY2(evals.size() >= 2, qPrintable(run.err));
        const json& before = evals.front();
        QCOMPARE(before.at("step").get<int>(), 0);
        QCOMPARE(before.at("pairs").get<int>(), 3);
        QVERIFY(!before.contains("perplexity"));
        QVERIFY(std::abs(before.at("loss").get<double>() - std::log(2.0)) < 1e-6);
        QVERIFY(std::abs(figure(before, "rewards_chosen")) < 1e-6);
        QVERIFY(std::abs(figure(before, "rewards_margin")) < 1e-6);
        QCOMPARE(figure(before, "rewards_accuracy"), 0.0);
        const json& after = evals.back();
        QCOMPARE(after.at("step").get<int>(), 6);
        QVERIFY2(figure(after, "rewards_margin") > 0.0, after.dump().c_str());
        QVERIFY2(after.at("loss").get<double>() < std::log(2.0), after.dump().c_str());
        QVERIFY2(run.err.contains("validation DPO loss"), qPrintable(run.err));
        QVERIFY2(!run.err.contains("perplexity"), qPrintable(run.err));
    }

    // presets/recipes/dpo.yaml runs from a clone alone: the demo model and
    // the demo pairs beside it.
    void recipeRuns()
    {
        QTemporaryDir dir;
        const std::string runDir = dir.filePath("run").toStdString();
        const Run run = cli({"train", tb::test::qSourcePath("presets/recipes/dpo.yaml"), "--output",
            QString::fromStdString(runDir), "--max-steps", "2", "--threads", "1"});
        QVERIFY2(run.exitCode == 0, qPrintable(run.out + run.err));
        const std::vector<json> steps = ofType(events(runDir), "step");
        QCOMPARE(steps.size(), size_t(2));
        QCOMPARE(steps.front().at("samples").get<int>(), 4); // micro_batch pairs
        QVERIFY(std::abs(steps.front().at("loss").get<double>() - std::log(2.0)) < 1e-6);
        QVERIFY(steps.back().contains("dpo"));
    }

    // Stopped after step 3 and resumed from its checkpoint, the run goes on
    // as if never stopped: the same losses and DPO figures to the last bit
    // (the pairs' order and the adapter come back from the checkpoint).
    void resumesExactly()
    {
        QTemporaryDir dir;
        const Run whole = cli({"train", QString::fromStdString(writeDpoConfig(dir, "whole", ""))});
        QVERIFY2(whole.exitCode == 0, qPrintable(whole.out + whole.err));
        const std::string config = writeDpoConfig(dir, "resumed", "  checkpoint_every: 3\n");
        const Run first = cli({"train", QString::fromStdString(config)});
        QVERIFY2(first.exitCode == 0, qPrintable(first.out + first.err));
        const std::string resumedDir = dir.filePath("resumed").toStdString();
        const Run again = cli({"train", QString::fromStdString(config), "--resume-from",
            QString::fromStdString(resumedDir + "/checkpoints/step-00000003")});
        QVERIFY2(again.exitCode == 0, qPrintable(again.out + again.err));
        const auto expected = stepsByNumber(dir.filePath("whole").toStdString());
        const auto resumed = stepsByNumber(resumedDir);
        QCOMPARE(resumed.size(), size_t(6));
        for (int step = 4; step <= 6; ++step) {
            QCOMPARE(resumed.at(step).at("loss").get<double>(),
                expected.at(step).at("loss").get<double>());
            QVERIFY2(resumed.at(step).at("dpo") == expected.at(step).at("dpo"),
                resumed.at(step).dump().c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestDpoCommand)
#include "test_dpo_command.moc"
