#include "../support/test_data.h"
#include "config/config_loader.h"
#include "config/config_schema.h"
#include "config/config_writer.h"

#include "common/atomic_file.h"
#include "config_test_util.h"

#include <QDir>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <set>

using namespace tb::config;
using namespace configtest;

namespace {

std::string recipePath(const char* name)
{
    return tb::test::sourcePath("presets/recipes/") + name;
}

// QVERIFY2 evaluates its message even when the check passes.
template <typename T> std::string errorText(const tb::common::Result<T>& result)
{
    return result.ok() ? std::string() : result.error().toString();
}

void collectPaths(const nlohmann::json& tree, const std::string& prefix, std::set<std::string>& out)
{
    for (const auto& [key, value] : tree.items()) {
        const std::string path = prefix.empty() ? key : prefix + "." + key;
        out.insert(path);
        if (value.is_object())
            collectPaths(value, path, out);
    }
}

} // namespace

class TestConfig : public QObject {
    Q_OBJECT

private slots:
    void minimalConfigResolvesDefaults()
    {
        const LoadReport report = parse(kMinimal);
        QVERIFY2(report.ok(), problemsText(report).c_str());
        const RunConfig& config = *report.config;
        QCOMPARE(config.name, std::string("run"));
        QCOMPARE(config.model, std::string("/runs/models/tiny"));
        QCOMPARE(config.tokenizer, config.model);
        QVERIFY(config.method == Method::Lora);
        QCOMPARE(config.lora.targetModules, llamaLinearModules());
        // The planner's LoRA defaults (test_plan_options checks its side).
        QCOMPARE(config.lora.rank, tb::common::kLoraRankDefault);
        QCOMPARE(config.lora.alpha, tb::common::kLoraAlphaDefault);
        QCOMPARE(config.lora.dropout, tb::common::kLoraDropoutDefault);
        QCOMPARE(config.data.trainFiles, std::vector<std::string>{"/runs/train.jsonl"});
        QCOMPARE(config.data.packing, false);
        QCOMPARE(config.training.learningRate, 2e-4);
        QVERIFY(config.output.exportKind == ExportKind::Adapter);
        QCOMPARE(config.output.dir, std::string("/runs/runs/run"));
        QVERIFY(config.distributed == DistributedConfig{});
        QVERIFY(config.distributed.sharding == Sharding::Ddp);
        QVERIFY(config.distributed.offload == Offload::None);
        QCOMPARE(config.distributed.timeoutSeconds, 300.0);
        QVERIFY(report.warnings.isEmpty());
    }

    void readsDistributed_data()
    {
        QTest::addColumn<QString>("section");
        QTest::addColumn<QString>("sharding");
        QTest::addColumn<QString>("offload");
        QTest::addColumn<double>("timeout");
        QTest::addRow("empty section") << "distributed: {}\n"
                                       << "ddp"
                                       << "none" << 300.0;
        QTest::addRow("timeout only") << "distributed:\n  timeout_seconds: 42.5\n"
                                      << "ddp"
                                      << "none" << 42.5;
        QTest::addRow("integer timeout") << "distributed:\n  timeout_seconds: 1800\n"
                                         << "ddp"
                                         << "none" << 1800.0;
        QTest::addRow("largest timeout") << "distributed:\n  timeout_seconds: 86400\n"
                                         << "ddp"
                                         << "none" << 86400.0;
        const QString sharding = "distributed:\n  sharding: %1\n  offload: %2\n";
        const auto row = [&](const char* spelled, const char* spelledOffload, const char* canonical,
                             const char* canonicalOffload) {
            QTest::addRow("%s + %s", spelled, spelledOffload)
                << sharding.arg(spelled, spelledOffload) << canonical << canonicalOffload << 300.0;
        };
        row("ddp", "none", "ddp", "none");
        row("ddp", "optimizer", "ddp", "optimizer");
        row("zero1", "optimizer", "zero1", "optimizer");
        row("zero2", "optimizer", "zero2", "optimizer");
        row("zero3", "optimizer+params", "zero3", "optimizer+params");
        row("fsdp-full", "optimizer+params", "fsdp-full", "optimizer+params");
        row("fsdp-grad-op", "optimizer+params", "fsdp-grad-op", "optimizer+params");
        row("fsdp-hybrid", "optimizer+params", "fsdp-hybrid", "optimizer+params");
        row("\"zero3\"", "\"optimizer\"", "zero3", "optimizer");
        // The planner's spellings.
        row("none", "none", "ddp", "none");
        row("zero-1", "none", "zero1", "none");
        row("zero-2", "optimizer", "zero2", "optimizer");
        row("zero-3", "params", "zero3", "optimizer+params");
        row("fsdp", "all", "fsdp-full", "optimizer+params");
        row("full_shard", "none", "fsdp-full", "none");
        row("shard_grad_op", "params", "fsdp-grad-op", "optimizer+params");
        row("hybrid_shard", "all", "fsdp-hybrid", "optimizer+params");
    }
    void readsDistributed()
    {
        QFETCH(QString, section);
        QFETCH(QString, sharding);
        QFETCH(QString, offload);
        QFETCH(double, timeout);
        const LoadReport report = parse(std::string(kMinimal) + section.toStdString());
        QVERIFY2(report.ok(), problemsText(report).c_str());
        QVERIFY(report.warnings.isEmpty());
        const DistributedConfig& distributed = report.config->distributed;
        QCOMPARE(QString::fromUtf8(toString(distributed.sharding).data()), sharding);
        QCOMPARE(QString::fromUtf8(toString(distributed.offload).data()), offload);
        QCOMPARE(distributed.timeoutSeconds, timeout);
        // Whatever the spelling, the canonical one is written back and reads
        // back to the same values.
        const std::string yaml = toYaml(*report.config);
        QVERIFY2(yaml.find("sharding: " + sharding.toStdString() + "\n") != std::string::npos,
            yaml.c_str());
        LoadOptions options;
        options.baseDir = "/";
        const LoadReport reread = parseRunConfig(yaml, options);
        QVERIFY2(reread.ok(), problemsText(reread).c_str());
        QVERIFY(reread.config->distributed == distributed);
        const nlohmann::json json = toJson(*report.config)["distributed"];
        QCOMPARE(json["sharding"].get<std::string>(), sharding.toStdString());
        QCOMPARE(json["offload"].get<std::string>(), offload.toStdString());
        QCOMPARE(json["timeout_seconds"].get<double>(), timeout);
    }

    void distributedSurvivesTheWriter()
    {
        RunConfig config = *parse(kMinimal).config;
        config.distributed.sharding = Sharding::FsdpHybrid;
        config.distributed.offload = Offload::OptimizerAndParams;
        config.distributed.timeoutSeconds = 1.0 / 3.0;
        QTemporaryDir dir;
        const std::string saved = dir.filePath("config.yaml").toStdString();
        QVERIFY(saveRunConfig(saved, config).ok());
        const auto reread = loadRunConfig(saved);
        QVERIFY2(reread.ok(), errorText(reread).c_str());
        QVERIFY(reread.value().distributed == config.distributed);
        QVERIFY(reread.value() == config);
    }

    void defaultsDependOnOtherKeys_data()
    {
        QTest::addColumn<QString>("extra");
        QTest::addColumn<double>("learningRate");
        QTest::addColumn<bool>("packing");
        QTest::addColumn<QString>("exportKind");
        QTest::addRow("lora") << "" << 2e-4 << false << "adapter";
        QTest::addRow("qlora") << "method: qlora\n" << 2e-4 << false << "adapter";
        QTest::addRow("full") << "method: full\n" << 2e-5 << false << "merged";
        QTest::addRow("text packs") << "method: full\ndata:\n  train: a.txt\n  format: text\n"
                                    << 2e-5 << true << "merged";
        QTest::addRow("explicit wins")
            << "training:\n  learning_rate: 0.5\ndata:\n  train: a.txt\n  format: text\n  "
               "packing: false\noutput:\n  export: both\n"
            << 0.5 << false << "both";
    }
    void defaultsDependOnOtherKeys()
    {
        QFETCH(QString, extra);
        QFETCH(double, learningRate);
        QFETCH(bool, packing);
        QFETCH(QString, exportKind);
        std::string text = "model: m\n" + extra.toStdString();
        if (!extra.contains("data:"))
            text += "data:\n  train: t.jsonl\n";
        const LoadReport report = parse(text);
        QVERIFY2(report.ok(), problemsText(report).c_str());
        QCOMPARE(report.config->training.learningRate, learningRate);
        QCOMPARE(report.config->data.packing, packing);
        QCOMPARE(QString::fromUtf8(toString(report.config->output.exportKind).data()), exportKind);
    }

    void warnsAboutIgnoredKeys()
    {
        const LoadReport report = parse(std::string(kMinimal) + "method: full\nlora:\n  rank: 4\n");
        QVERIFY2(report.ok(), problemsText(report).c_str());
        QCOMPARE(report.warnings.size(), size_t(1));
        QCOMPARE(report.warnings.items().front().yamlPath, std::string("lora"));
    }

    void allLinearExpands()
    {
        const LoadReport report =
            parse(std::string(kMinimal) + "lora:\n  target_modules: all-linear\n");
        QVERIFY2(report.ok(), problemsText(report).c_str());
        QCOMPARE(report.config->lora.targetModules, llamaLinearModules());
    }

    void checksPathsWhenAsked()
    {
        QTemporaryDir dir;
        LoadOptions options;
        options.baseDir = dir.path().toStdString();
        options.checkPaths = true;
        const LoadReport report =
            parseRunConfig("model: nowhere\ndata:\n  train: [a.jsonl, b.jsonl]\n", options);
        QVERIFY(!report.ok());
        QCOMPARE(report.problems.size(), size_t(3));
        QCOMPARE(report.problems.items()[0].yamlPath, std::string("model"));
        QCOMPARE(report.problems.items()[0].line, 1);
        QCOMPARE(report.problems.items()[1].yamlPath, std::string("data.train"));
    }

    void unreadableFileIsOneProblem()
    {
        const LoadReport report = readRunConfigFile("/nonexistent/run.yaml");
        QVERIFY(!report.ok());
        QCOMPARE(report.problems.size(), size_t(1));
        QVERIFY(!loadRunConfig("/nonexistent/run.yaml").ok());
    }

    void recipesLoad_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("method");
        QTest::addRow("full") << "full.yaml"
                              << "full";
        QTest::addRow("lora") << "lora.yaml"
                              << "lora";
        QTest::addRow("qlora") << "qlora.yaml"
                               << "qlora";
    }
    void recipesLoad()
    {
        QFETCH(QString, file);
        QFETCH(QString, method);
        // The recipes name the demo model and data that ship beside them.
        LoadOptions options;
        options.checkPaths = true;
        const LoadReport report = readRunConfigFile(recipePath(qPrintable(file)), options);
        QVERIFY2(report.ok(), problemsText(report).c_str());
        QVERIFY2(report.warnings.isEmpty(), report.warnings.toError("").toString().c_str());
        const RunConfig& config = *report.config;
        QCOMPARE(QString::fromUtf8(toString(config.method).data()), method);
        QCOMPARE(config.name, file.chopped(5).toStdString());
        QVERIFY(std::filesystem::is_regular_file(config.model + "/config.json"));
        QCOMPARE(std::filesystem::weakly_canonical(config.model).string(),
            std::filesystem::weakly_canonical(tb::test::demoModelDir()).string());
        QVERIFY(std::filesystem::is_regular_file(config.data.trainFiles.at(0)));
        QVERIFY(config.data.trainFiles.at(0).ends_with("resources/demo/tiny_instructions.jsonl"));
        QVERIFY(config.hasValidationData());
    }

    void savedConfigReadsBackEqual_data() { recipesLoad_data(); }
    void savedConfigReadsBackEqual()
    {
        QFETCH(QString, file);
        const auto loaded = loadRunConfig(recipePath(qPrintable(file)));
        QVERIFY2(loaded.ok(), errorText(loaded).c_str());
        QTemporaryDir dir;
        const std::string saved = dir.filePath("resolved.yaml").toStdString();
        QVERIFY(saveRunConfig(saved, loaded.value()).ok());
        const auto reread = loadRunConfig(saved);
        QVERIFY2(reread.ok(), errorText(reread).c_str());
        QVERIFY(reread.value() == loaded.value());
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1); // no temporary left
    }

    void oddValuesSurviveTheWriter()
    {
        RunConfig config = *parse(kMinimal).config;
        config.name = "yes";
        config.data.textSeparator = "\n<|endoftext|>\n";
        config.data.instruction = "Summarize: \"the\" dialogue # not a comment";
        config.training.learningRate = 1.0 / 3.0;
        config.training.seed = 18446744073709551615ull;
        LoadOptions options;
        options.baseDir = "/";
        const LoadReport reread = parseRunConfig(toYaml(config), options);
        QVERIFY2(reread.ok(), problemsText(reread).c_str());
        QVERIFY(*reread.config == config);
    }

    void writerJsonAndSchemaAgree()
    {
        const RunConfig config = *parse(kMinimal).config;
        std::set<std::string> written;
        collectPaths(toJson(config), "", written);
        std::set<std::string> schema;
        for (const KeyInfo& key : runConfigKeys())
            QVERIFY2(schema.insert(std::string(key.path)).second, key.path.data());
        QCOMPARE(written, schema);
        QCOMPARE(toJson(config)["training"]["learning_rate"].get<double>(), 2e-4);
    }

    void everyKeyIsDocumented()
    {
        const auto docs = tb::common::readFile(tb::test::sourcePath("docs/RUN_CONFIG.md"));
        QVERIFY2(docs.ok(), errorText(docs).c_str());
        for (const KeyInfo& key : runConfigKeys()) {
            const std::string quoted = "`" + std::string(key.path) + "`";
            QVERIFY2(docs.value().find(quoted) != std::string::npos, key.path.data());
            QVERIFY(!key.type.empty() && !key.meaning.empty());
        }
        // The example in the docs is a valid config.
        const size_t begin = docs.value().find("```yaml\n");
        QVERIFY(begin != std::string::npos);
        const size_t end = docs.value().find("```", begin + 8);
        const LoadReport example = parse(docs.value().substr(begin + 8, end - begin - 8));
        QVERIFY2(example.ok(), problemsText(example).c_str());
        QVERIFY(example.config->data.format == DataFormat::Csv);
        QVERIFY(example.config->distributed.sharding == Sharding::Ddp);
        QCOMPARE(example.config->distributed.timeoutSeconds, 600.0);
    }
};

QTEST_GUILESS_MAIN(TestConfig)
#include "test_config.moc"
