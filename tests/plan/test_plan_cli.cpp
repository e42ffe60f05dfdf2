#include "common/atomic_file.h"
#include "common/text.h"
#include "plan/plan_file.h"
#include "plan/plan_options.h"
#include "plan_cli_fixture.h"

#include <QtTest>

#include <cmath>
#include <nlohmann/json.hpp>

// Runs the built tunebench-cli: the README's first command, --json for
// scripts, and bad input that must exit 2 with a message naming the field.
class TestPlanCli : public tb::test::PlanCliFixture {
    Q_OBJECT

private slots:
    // A CPU plan: the device is this machine, its memory the process's.
    void cpuPlan()
    {
        const Run r = plan({"--gpu", "cpu", "--model", "SmolLM2-135M", "--method", "full",
            "--precision", "fp32", "--json"});
        QCOMPARE(r.exitCode, 0);
        const nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
        QCOMPARE(j["gpu"], "cpu");
        QCOMPARE(j["per_gpu_bytes"]["peak_allocated"], j["per_gpu_bytes"]["peak_reserved"]);
        QVERIFY(j["tokens_per_second"].get<double>() > 0);
        QVERIFY(j["calibration"].is_null());
    }

    void defaultPlan()
    {
        const Run r = plan({});
        QCOMPARE(r.exitCode, 0);
        for (const char* part : {"Llama-3.1-8B", "LoRA r=16", "Standard_NC24ads_A100_v4",
                 "Memory per GPU", "FITS", "Tokens/s", "Cost"})
            QVERIFY2(r.out.contains(part), qPrintable(r.out));
    }

    void explainShowsFormulasAndSources()
    {
        const Run r = plan({"--explain"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("      = "));
        QVERIFY(r.out.contains("Korthikanti"));
        QVERIFY(r.out.contains("LoRA (Hu et al. 2021)"));
    }

    void jsonForScripts()
    {
        const Run r = plan({"--model", "Llama-3-8B", "--method", "full", "--vm",
            "Standard_ND96asr_v4", "--gpus-per-node", "2", "--sharding", "fsdp-full", "--json"});
        QCOMPARE(r.exitCode, 0);
        const nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
        QCOMPARE(j["params_total"].get<long long>(), 8'030'261'248LL);
        QCOMPARE(j["params_trainable"].get<long long>(), 8'030'261'248LL);
        for (const char* key : {"weights", "gradients", "optimizer", "activations", "logits",
                 "buffers", "overhead", "total"})
            QVERIFY2(j["per_gpu_bytes"].contains(key), key);
        QCOMPARE(j["fits"].get<bool>(), false);
        QCOMPARE(j["scaling"].size(), size_t(8));
        QCOMPARE(j["scaling"][0]["efficiency"].get<double>(), 1.0);
        for (const char* key : {"gpu_usable_bytes", "tokens_per_second", "samples_per_second",
                 "step_seconds", "components", "figures", "hours", "cost_usd", "scaling"})
            QVERIFY2(j.contains(key), key);
        long long sum = 0;
        const nlohmann::json& perGpu = j["per_gpu_bytes"];
        for (const char* key :
            {"weights", "gradients", "optimizer", "activations", "logits", "buffers", "overhead"})
            sum += perGpu[key].get<long long>();
        QVERIFY(std::llabs(sum - perGpu["total"].get<long long>()) <= 8);
        // The three peaks nest, and the total is the device's figure.
        const long long allocated = perGpu["peak_allocated"].get<long long>();
        const long long reserved = perGpu["peak_reserved"].get<long long>();
        QVERIFY(allocated > 0 && allocated < reserved);
        QVERIFY(reserved < perGpu["device_used"].get<long long>());
        QCOMPARE(perGpu["device_used"], perGpu["total"]);
        for (const nlohmann::json& c : j["components"])
            QVERIFY(c["peak"] == "peak_allocated" || c["peak"] == "peak_reserved"
                || c["peak"] == "device_used");
    }

    void recommendJson()
    {
        const Run r =
            plan({"--model", "Mistral-7B-v0.1", "--recommend", "--max-nodes", "2", "--json"});
        QCOMPARE(r.exitCode, 0);
        const nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
        QVERIFY(j["recommendations"].is_array());
        QVERIFY(!j["recommendations"].empty());
        for (const char* key : {"vm_size", "nodes", "gpus_total", "strategy", "fits",
                 "per_gpu_total_bytes", "tokens_per_second", "hours", "cost_usd"})
            QVERIFY2(j["recommendations"][0].contains(key), key);
        QVERIFY(j["rejected"].is_array());
        QVERIFY(!j["rejected"].empty());
    }

    void recommendTable()
    {
        const Run r = plan({"--recommend", "--max-nodes", "2"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("Azure VM sizes that fit"));
        QVERIFY(r.out.contains("Rejected"));
        QVERIFY(r.out.contains("retired"));
    }

    // A model the trainer does not compute: every option is marked with the
    // model's reason, and no hint offers --runnable-only, which would keep none.
    void recommendForAModelTheTrainerDoesNotRun()
    {
        const Run r = plan({"--model", "gpt-oss-20b", "--recommend", "--max-nodes", "1"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("not Tunebench's trainer: ")
                && r.out.contains("gpt-oss: the trainer does not compute"),
            qPrintable(r.out));
        QVERIFY2(!r.out.contains("--runnable-only keeps"), qPrintable(r.out));
    }

    // --list-models marks the presets Tunebench's trainer does not run,
    // with the reason its config reader refuses them by.
    void listModelsMarksWhatTheTrainerRuns_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("mark"); // empty: runs
        const QString gptOss = "  [not Tunebench's trainer: gpt-oss: the trainer does not compute "
                               "its attention sinks";
        QTest::addRow("gpt-oss-20b") << "gpt-oss-20b  (openai/gpt-oss-20b)" << gptOss;
        QTest::addRow("gpt-oss-120b") << "gpt-oss-120b  (openai/gpt-oss-120b)" << gptOss;
        QTest::addRow("Qwen3-1.7B") << "Qwen3-1.7B  (Qwen/Qwen3-1.7B)" << QString();
        QTest::addRow("Gemma-3-27B") << "Gemma-3-27B  (google/gemma-3-27b-pt)" << QString();
        QTest::addRow("Mixtral") << "Mixtral-8x7B-v0.1  (mistralai/Mixtral-8x7B-v0.1)" << QString();
    }
    void listModelsMarksWhatTheTrainerRuns()
    {
        QFETCH(QString, model);
        QFETCH(QString, mark);
        const Run r = plan({"--list-models"});
        QCOMPARE(r.exitCode, 0);
        QString line;
        for (const QString& each : r.out.split('\n'))
            if (each.startsWith(model))
                line = each;
        QVERIFY2(!line.isEmpty(), qPrintable(r.out));
        if (mark.isEmpty())
            QCOMPARE(line, model);
        else
            QVERIFY2(line.startsWith(model + mark), qPrintable(line));
    }

    // A gpt-oss plan in JSON: the trainer's refusal among its warnings, and
    // its experts as stored or upcast.
    void gptOssExpertsFromTheCommandLine()
    {
        const QStringList args{"--model", "gpt-oss-20b", "--gpu", "H100-SXM", "--json"};
        const Run stored = plan(args);
        QCOMPARE(stored.exitCode, 0);
        const Run upcast = plan(args + QStringList{"--mxfp4-experts", "upcast"});
        QCOMPARE(upcast.exitCode, 0);
        const nlohmann::json s = nlohmann::json::parse(stored.out.toStdString());
        const nlohmann::json u = nlohmann::json::parse(upcast.out.toStdString());
        QCOMPARE(s["mxfp4_experts"], "stored");
        QCOMPARE(u["mxfp4_experts"], "upcast");
        QVERIFY(s["per_gpu_bytes"]["weights"].get<double>()
            < u["per_gpu_bytes"]["weights"].get<double>());
        bool said = false;
        for (const auto& warning : s["warnings"])
            said = said || warning.get<std::string>().starts_with("Tunebench's trainer cannot run");
        QVERIFY2(said, stored.out.toUtf8().constData());
        const Run full = plan(args + QStringList{"--method", "full"});
        QCOMPARE(full.exitCode, 2);
        QVERIFY2(
            full.err.contains("method: full, but mxfp4_experts: stored"), qPrintable(full.err));
    }

    // QLoRA's constants without double quantization, as transformers'
    // BitsAndBytesConfig defaults: 0.5 instead of 0.127 bits a weight, said
    // in the JSON; our trainer always double-quantises, so it refuses.
    void doubleQuantFromTheCommandLine()
    {
        const QStringList args{
            "--model", "Llama-2-70B", "--method", "qlora", "--gpu", "H100-SXM", "--json"};
        const Run on = plan(args);
        const Run off = plan(args + QStringList{"--no-double-quant"});
        QCOMPARE(on.exitCode, 0);
        QCOMPARE(off.exitCode, 0);
        const nlohmann::json a = nlohmann::json::parse(on.out.toStdString());
        const nlohmann::json b = nlohmann::json::parse(off.out.toStdString());
        QCOMPARE(a["double_quant"], true);
        QCOMPARE(b["double_quant"], false);
        const Run text = plan({"--model", "Llama-2-70B", "--method", "qlora", "--gpu", "H100-SXM",
            "--no-double-quant"});
        QVERIFY2(text.out.contains("QLoRA (NF4 base, no double quantization) r=16"),
            qPrintable(text.out));
        const double more = b["per_gpu_bytes"]["weights"].get<double>()
            - a["per_gpu_bytes"]["weights"].get<double>();
        const double quantised =
            80.0 * (2 * 8192.0 * 8192 + 2 * 8192.0 * 1024 + 3 * 8192.0 * 28672);
        const double expected = quantised * (4.0 / 64 - (1.0 / 64 + 4.0 / 16384)); // 3.19 GB
        QVERIFY2(std::fabs(more - expected) < 16, qPrintable(QString::number(more, 'f', 0)));
        const Run ours = plan(args + QStringList{"--no-double-quant", "--engine", "tunebench"});
        QCOMPARE(ours.exitCode, 2);
        QVERIFY2(ours.err.contains("double_quant: false, expected true with engine tunebench"),
            qPrintable(ours.err));
    }

    void badInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::addRow("unknown preset")
            << QStringList{"--model", "llama-3-9b"} << "did you mean Llama-3-8B";
        QTest::addRow("zero") << QStringList{"--micro-batch", "0"} << "--micro-batch: got 0";
        QTest::addRow("negative") << QStringList{"--seq-len", "-5"} << "--seq-len";
        QTest::addRow("overflow") << QStringList{"--nodes", "99999999999999999999999"}
                                  << "--nodes: got 99999999999999999999999, expected an integer";
        QTest::addRow("not a number") << QStringList{"--epochs", "many"} << "--epochs";
        QTest::addRow("bad enum") << QStringList{"--sharding", "zero4"}
                                  << "--sharding: got zero4, expected ddp, zero1, zero2";
        QTest::addRow("unknown vm")
            << QStringList{"--vm", "Standard_ND96asr"} << "did you mean Standard_ND96asr_v4";
        QTest::addRow("too many gpus") << QStringList{"--gpus-per-node", "4"} << "has 1 GPU";
        QTest::addRow("bad combination")
            << QStringList{"--offload", "optimizer+params"} << "which keeps every parameter";
        QTest::addRow("bad lora target")
            << QStringList{"--lora-targets", "q_proj,attn"} << "'attn' not in";
        QTest::addRow("missing config")
            << QStringList{"--model", "/nonexistent/config.json"} << "/nonexistent/config.json";
        QTest::addRow("missing plan")
            << QStringList{"--plan", "/nonexistent/plan.yaml"} << "/nonexistent/plan.yaml";
        QTest::addRow("unknown option") << QStringList{"--flux"} << "unknown option";
    }
    void badInput()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const Run r = plan(args);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(expected), qPrintable(r.err));
        QVERIFY(r.out.isEmpty());
    }

    void malformedFiles_data()
    {
        QTest::addColumn<QString>("option");
        QTest::addColumn<QString>("content");
        QTest::addColumn<QString>("expected");
        QTest::addRow("config.json") << "--model"
                                     << "{\"hidden_size\": \"big\"}"
                                     << "field 'hidden_size'";
        QTest::addRow("plan yaml") << "--plan"
                                   << "model: Llama-3-8B\nmicro_batch: lots\n"
                                   << "micro_batch: got lots, expected an integer from 1 to 65536";
        QTest::addRow("deepspeed") << "--from-deepspeed"
                                   << "{\"zero_optimization\": {\"stage\": 7}}"
                                   << "zero_optimization.stage";
        QTest::addRow("accelerate") << "--from-accelerate"
                                    << "distributed_type: [x\n"
                                    << "not valid YAML";
    }
    void malformedFiles()
    {
        QFETCH(QString, option);
        QFETCH(QString, content);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const QString path = dir.filePath(option == "--model" ? "config.json" : "input.file");
        QVERIFY(tb::common::writeFileAtomic(path.toStdString(), content.toStdString()).ok());
        const Run r = plan({option, path});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(expected), qPrintable(r.err));
        QVERIFY2(r.err.contains(path), qPrintable(r.err));
    }

    // Every flag of the option table: both ends of its range saved as given,
    // a value past them refused naming the flag, as plan files and the GUI
    // do (test_plan_options, test_planner_page).
    void everyFlagOfTheTable_data()
    {
        QTest::addColumn<QString>("key");
        for (const tb::plan::PlanOption& option : tb::plan::planOptions())
            if (!option.flag.empty())
                QTest::newRow(std::string(option.flag).c_str())
                    << QString::fromUtf8(option.key.data(), int(option.key.size()));
    }
    void everyFlagOfTheTable()
    {
        using tb::plan::OptionKind;
        QFETCH(QString, key);
        const tb::plan::PlanOption& option = *tb::plan::findPlanOption(key.toStdString());
        const QString flag = "--" + QString::fromUtf8(option.flag.data(), int(option.flag.size()));
        const OptionKind kind = tb::plan::kindOf(option);
        QVERIFY2(plan({"--help"}).out.contains(flag), "--help lists the flag");

        std::vector<std::pair<QStringList, std::string>> accepted; // arguments, value text
        std::vector<QString> refused;
        switch (kind) {
        case OptionKind::Integer:
        case OptionKind::Real:
            for (const double end : {option.min, option.max}) {
                const std::string text = kind == OptionKind::Integer
                    ? std::to_string(std::llround(end))
                    : tb::common::shortestNumber(end);
                accepted.push_back({{flag, QString::fromStdString(text)}, text});
            }
            refused.push_back(QString::fromStdString(kind == OptionKind::Integer
                    ? std::to_string(std::llround(option.max) + 1)
                    : tb::common::shortestNumber(option.max * 1.01 + 0.01)));
            break;
        case OptionKind::Boolean:
            accepted.push_back({{flag}, "true"});
            accepted.push_back({{"--no-" + flag.mid(2)}, "false"});
            break;
        case OptionKind::Choice:
            accepted.push_back(
                {{flag, QString::fromStdString(tb::plan::choiceNames(option).back())},
                    tb::plan::choiceNames(option).back()});
            refused.push_back("maybe");
            break;
        case OptionKind::Text: {
            const std::string text = option.key == "gpu" ? "A100-80GB-SXM"
                : option.key == "model"                  ? "Qwen2.5-7B"
                                                         : "Standard_ND96asr_v4";
            accepted.push_back({{flag, QString::fromStdString(text)}, text});
            break;
        }
        case OptionKind::TextList:
            accepted.push_back({{flag, "q_proj,v_proj"}, "q_proj,v_proj"});
            break;
        }
        // ZeRO-3 (DDP for the engine: hf-trainer plans DDP only, and alone
        // plans an evaluation) and a dataset in tokens: any value of this
        // option makes a plan.
        QStringList context;
        if (option.key == "eval_batch")
            context << "--engine"
                    << "hf-trainer";
        else if (option.key != "sharding" && option.key != "engine")
            context << "--sharding"
                    << "zero3";
        if (option.key != "dataset.tokens")
            context << "--dataset-tokens"
                    << "1000000";
        for (const auto& [args, text] : accepted) {
            QTemporaryDir dir;
            const QString path = dir.filePath("plan.yaml");
            const Run r = plan(context + args + QStringList{"--save-plan", path});
            const auto saved = tb::plan::loadPlanYaml(path.toStdString());
            QVERIFY2(saved.ok(), qPrintable(args.join(' ') + ": " + r.err));
            QCOMPARE(tb::plan::valueText(option, *saved), text);
        }
        for (const QString& value : refused) {
            QTemporaryDir dir;
            const QString path = dir.filePath("plan.yaml");
            const Run r = plan({flag, value, "--save-plan", path});
            QCOMPARE(r.exitCode, 2);
            const QString expected = flag + ": got " + value + ", expected "
                + QString::fromStdString(tb::plan::expectedText(option));
            QVERIFY2(r.err.contains(expected), qPrintable(r.err));
            QVERIFY(!QFile::exists(path));
        }
    }

    void saveAndReloadPlan()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath("plan.yaml");
        const Run saved = plan({"--model", "Qwen2.5-7B", "--method", "qlora", "--lora-rank", "64",
            "--save-plan", path, "--json"});
        QCOMPARE(saved.exitCode, 0);
        const Run loaded = plan({"--plan", path, "--json"});
        QCOMPARE(loaded.exitCode, 0);
        QCOMPARE(nlohmann::json::parse(loaded.out.toStdString())["per_gpu_bytes"],
            nlohmann::json::parse(saved.out.toStdString())["per_gpu_bytes"]);
    }

    void importsDeepSpeed()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath("ds.json");
        QVERIFY(tb::common::writeFileAtomic(path.toStdString(),
            R"({"zero_optimization": {"stage": 3}, "bf16": {"enabled": true},
                                                "train_micro_batch_size_per_gpu": 1})")
                    .ok());
        const Run r = plan({"--from-deepspeed", path, "--vm", "Standard_ND96isr_H100_v5",
            "--method", "full", "--json"});
        QCOMPARE(r.exitCode, 0);
        const nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
        QCOMPARE(j["sharding"].get<std::string>(), std::string("zero3"));
        QCOMPARE(j["micro_batch"].get<int>(), 1);
        QCOMPARE(j["world_size"].get<int>(), 8);
    }
};

QTEST_GUILESS_MAIN(TestPlanCli)
#include "test_plan_cli.moc"
