#include "config/config_loader.h"
#include "config/config_schema.h"
#include "config/config_writer.h"

#include "common/atomic_file.h"

#include <QDir>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <set>

using namespace tb::config;

namespace {

// The smallest valid config; rows below add one wrong key to it.
const char* const kMinimal = "model: models/tiny\n"
                             "data:\n"
                             "  train: train.jsonl\n";

LoadReport parse(const std::string& text)
{
    LoadOptions options;
    options.sourceName = "/runs/run.yaml";
    return parseRunConfig(text, options);
}

std::string recipePath(const char* name)
{
    return std::string(TB_SOURCE_DIR) + "/presets/recipes/" + name;
}

bool sharedModelPresent()
{
    return std::filesystem::is_regular_file(
        std::string(TB_SHARED_DATA_DIR) + "/models/stories260K/config.json");
}

// QVERIFY2 evaluates its message even when the check passes.
template <typename T> std::string errorText(const tb::common::Result<T>& result)
{
    return result.ok() ? std::string() : result.error().toString();
}

std::string problemsText(const LoadReport& report)
{
    return report.error().toString();
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
        QCOMPARE(config.data.trainFiles, std::vector<std::string>{"/runs/train.jsonl"});
        QCOMPARE(config.data.packing, false);
        QCOMPARE(config.training.learningRate, 2e-4);
        QVERIFY(config.output.exportKind == ExportKind::Adapter);
        QCOMPARE(config.output.dir, std::string("/runs/runs/run"));
        QVERIFY(report.warnings.isEmpty());
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

    void rejects_data()
    {
        QTest::addColumn<QString>("yaml");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("line");
        const QString base = QString::fromUtf8(kMinimal);
        // Line numbers count from the first line of `base` (3 lines).
        QTest::addRow("negative learning rate") << base + "training:\n  learning_rate: -0.1\n"
                                                << "training.learning_rate"
                                                << "got -0.1, expected a positive number" << 5;
        QTest::addRow("learning rate as text") << base + "training:\n  learning_rate: fast\n"
                                               << "training.learning_rate"
                                               << "got fast, expected a positive number" << 5;
        QTest::addRow("quoted integer") << base + "training:\n  micro_batch: \"2\"\n"
                                        << "training.micro_batch"
                                        << "got \"2\", expected a positive integer" << 5;
        QTest::addRow("zero micro batch") << base + "training:\n  micro_batch: 0\n"
                                          << "training.micro_batch"
                                          << "got 0" << 5;
        QTest::addRow("fractional accumulation") << base + "training:\n  grad_accum: 1.5\n"
                                                 << "training.grad_accum"
                                                 << "expected a positive integer" << 5;
        QTest::addRow("zero epochs") << base + "training:\n  epochs: 0\n"
                                     << "training.epochs"
                                     << "got 0" << 5;
        QTest::addRow("negative max steps") << base + "training:\n  max_steps: -3\n"
                                            << "training.max_steps"
                                            << "expected an integer >= 0" << 5;
        QTest::addRow("bad schedule") << base + "training:\n  schedule: cosin\n"
                                      << "training.schedule"
                                      << "expected cosine, linear or constant" << 5;
        QTest::addRow("negative warmup") << base + "training:\n  warmup_steps: -1\n"
                                         << "training.warmup_steps"
                                         << "got -1" << 5;
        QTest::addRow("warmup ratio 1") << base + "training:\n  warmup_ratio: 1\n"
                                        << "training.warmup_ratio"
                                        << "expected a number in [0, 1)" << 5;
        QTest::addRow("both warmups")
            << base + "training:\n  warmup_steps: 5\n  warmup_ratio: 0.1\n"
            << "training.warmup_ratio"
            << "given together with training.warmup_steps" << 6;
        QTest::addRow("negative weight decay") << base + "training:\n  weight_decay: -0.01\n"
                                               << "training.weight_decay"
                                               << "expected a number >= 0" << 5;
        QTest::addRow("beta of one") << base + "training:\n  adam_beta1: 1.0\n"
                                     << "training.adam_beta1"
                                     << "in [0, 1)" << 5;
        QTest::addRow("zero epsilon") << base + "training:\n  adam_epsilon: 0\n"
                                      << "training.adam_epsilon"
                                      << "positive" << 5;
        QTest::addRow("negative clip") << base + "training:\n  max_grad_norm: -1\n"
                                       << "training.max_grad_norm"
                                       << "got -1" << 5;
        QTest::addRow("negative seed") << base + "training:\n  seed: -1\n"
                                       << "training.seed"
                                       << "expected an integer >= 0" << 5;
        QTest::addRow("eval without validation") << base + "training:\n  eval_every: 10\n"
                                                 << "training.eval_every"
                                                 << "no validation data" << 5;
        QTest::addRow("log every zero") << base + "training:\n  log_every: 0\n"
                                        << "training.log_every"
                                        << "got 0" << 5;
        QTest::addRow("infinite rate") << base + "training:\n  learning_rate: .inf\n"
                                       << "training.learning_rate"
                                       << "got .inf" << 5;
        QTest::addRow("missing model") << "data:\n  train: t.jsonl\n"
                                       << "model"
                                       << "missing" << 1;
        QTest::addRow("empty model") << "model: \"\"\ndata:\n  train: t.jsonl\n"
                                     << "model"
                                     << "got \"\", expected the path" << 1;
        QTest::addRow("missing train") << "model: m\ndata:\n  format: alpaca\n"
                                       << "data.train"
                                       << "missing" << 3;
        QTest::addRow("missing data") << "model: m\n"
                                      << "data.train"
                                      << "missing" << 1;
        QTest::addRow("empty train list") << "model: m\ndata:\n  train: []\n"
                                          << "data.train"
                                          << "got a list, expected a path or a list of paths" << 3;
        QTest::addRow("train list item")
            << "model: m\ndata:\n  train:\n    - a.jsonl\n    - {x: 1}\n"
            << "data.train[1]"
            << "got a mapping" << 5;
        QTest::addRow("unknown top key") << base + "modle: x\n"
                                         << "modle"
                                         << "unknown key at the top level" << 4;
        QTest::addRow("unknown training key") << base + "training:\n  learning_rat: 0.1\n"
                                              << "training.learning_rat"
                                              << "unknown key under training" << 5;
        QTest::addRow("unknown column role") << base + "  columns:\n    answer: summary\n"
                                             << "data.columns.answer"
                                             << "unknown key under data.columns" << 5;
        QTest::addRow("empty column") << base + "  columns:\n    response: \"\"\n"
                                      << "data.columns.response"
                                      << "expected a field or column name" << 5;
        QTest::addRow("duplicate key") << base + "method: lora\nmethod: full\n"
                                       << "method"
                                       << "duplicate key (first given on line 4)" << 5;
        QTest::addRow("bad method") << base + "method: lorra\n"
                                    << "method"
                                    << "got lorra, expected full, lora or qlora" << 4;
        QTest::addRow("bad precision") << base + "precision: fp16\n"
                                       << "precision"
                                       << "expected fp32, bf16-mixed or bf16" << 4;
        QTest::addRow("bad device") << base + "device: gpu\n"
                                    << "device"
                                    << "expected cpu or cuda" << 4;
        QTest::addRow("checkpointing not bool") << base + "activation_checkpointing: maybe\n"
                                                << "activation_checkpointing"
                                                << "expected true or false" << 4;
        QTest::addRow("bad format") << base + "  format: parquet\n"
                                    << "data.format"
                                    << "expected alpaca, chat, csv or text" << 4;
        QTest::addRow("bad template")
            << base + "  template: llama2\n"
            << "data.template"
            << "expected auto, alpaca, llama3, chatml, mistral or none" << 4;
        QTest::addRow("chat with alpaca template") << base + "  format: chat\n  template: alpaca\n"
                                                   << "data.template"
                                                   << "chat data needs a chat template" << 5;
        QTest::addRow("text with chat template") << base + "  format: text\n  template: chatml\n"
                                                 << "data.template"
                                                 << "plain text has no prompts" << 5;
        QTest::addRow("short sequence") << base + "  sequence_length: 1\n"
                                        << "data.sequence_length"
                                        << "from 2 to 1048576" << 4;
        QTest::addRow("packing not bool") << base + "  packing: sometimes\n"
                                          << "data.packing"
                                          << "expected true or false" << 4;
        QTest::addRow("split above one") << base + "  validation_split: 1.5\n"
                                         << "data.validation_split"
                                         << "got 1.5, expected a number in [0, 1)" << 4;
        QTest::addRow("split and file")
            << base + "  validation_split: 0.1\n  validation_file: v.jsonl\n"
            << "data.validation_split"
            << "given together with data.validation_file" << 4;
        QTest::addRow("bad malformed policy") << base + "  malformed: ignore\n"
                                              << "data.malformed"
                                              << "expected skip or fail" << 4;
        QTest::addRow("empty separator") << base + "  text_separator: \"\"\n"
                                         << "data.text_separator"
                                         << "a non-empty text" << 4;
        QTest::addRow("zero rank") << base + "lora:\n  rank: 0\n"
                                   << "lora.rank"
                                   << "expected an integer from 1 to 65536" << 5;
        QTest::addRow("negative alpha") << base + "lora:\n  alpha: -1\n"
                                        << "lora.alpha"
                                        << "expected a positive number" << 5;
        QTest::addRow("dropout of one") << base + "lora:\n  dropout: 1.0\n"
                                        << "lora.dropout"
                                        << "expected a number in [0, 1)" << 5;
        QTest::addRow("unknown module") << base + "lora:\n  target_modules: [q_proj, qproj]\n"
                                        << "lora.target_modules"
                                        << "got \"qproj\"" << 5;
        QTest::addRow("module twice") << base + "lora:\n  target_modules: [q_proj, q_proj]\n"
                                      << "lora.target_modules"
                                      << "listed twice" << 5;
        QTest::addRow("no modules") << base + "lora:\n  target_modules: []\n"
                                    << "lora.target_modules"
                                    << "expected a list of module" << 5;
        QTest::addRow("lora not a mapping") << base + "lora: 8\n"
                                            << "lora"
                                            << "got 8, expected a mapping of keys" << 4;
        QTest::addRow("bad export") << base + "output:\n  export: gguf\n"
                                    << "output.export"
                                    << "expected adapter, merged or both" << 5;
        QTest::addRow("adapter of full") << base + "method: full\noutput:\n  export: adapter\n"
                                         << "output.export"
                                         << "method full has no adapter" << 6;
        QTest::addRow("keep none") << base + "output:\n  keep_last: 0\n"
                                   << "output.keep_last"
                                   << "got 0" << 5;
        QTest::addRow("negative checkpoint interval") << base + "output:\n  checkpoint_every: -5\n"
                                                      << "output.checkpoint_every"
                                                      << "expected an integer >= 0" << 5;
        QTest::addRow("empty dir") << base + "output:\n  dir: \"\"\n"
                                   << "output.dir"
                                   << "expected a folder path" << 5;
        QTest::addRow("null value") << base + "training:\n  learning_rate:\n"
                                    << "training.learning_rate"
                                    << "got nothing" << 5;
        QTest::addRow("list at top") << "- model\n- data\n"
                                     << ""
                                     << "expected a mapping of keys" << 1;
        QTest::addRow("empty document") << "# nothing\n"
                                        << ""
                                        << "is empty" << 0;
        QTest::addRow("two documents") << base + "---\nmodel: other\n"
                                       << ""
                                       << "holds 2 YAML documents" << 0;
        QTest::addRow("broken yaml") << base + "training: [1, 2\n"
                                     << ""
                                     << "not valid YAML" << 0;
        QTest::addRow("non-scalar key") << base + "? [a, b]\n: 1\n"
                                        << ""
                                        << "got a list as a key" << 4;
    }
    void rejects()
    {
        QFETCH(QString, yaml);
        QFETCH(QString, path);
        QFETCH(QString, message);
        QFETCH(int, line);
        const LoadReport report = parse(yaml.toStdString());
        QVERIFY(!report.ok());
        bool found = false;
        for (const ConfigProblem& problem : report.problems.items()) {
            if (QString::fromStdString(problem.yamlPath) != path
                || !QString::fromStdString(problem.message).contains(message))
                continue;
            found = true;
            if (line > 0)
                QCOMPARE(problem.line, line);
            QVERIFY(problem.column >= 1 || problem.line == 0);
        }
        QVERIFY2(found, problemsText(report).c_str());
        // The one-Error form carries the file name and the path too.
        const QString text = QString::fromStdString(report.error().toString());
        QVERIFY2(text.contains("/runs/run.yaml"), qPrintable(text));
        QVERIFY2(text.contains(path), qPrintable(text));
    }

    void problemNamesFileLineAndColumn()
    {
        const LoadReport report =
            parse(std::string(kMinimal) + "training:\n  learning_rate: -0.1\n");
        QCOMPARE(report.problems.size(), size_t(1));
        QCOMPARE(report.problems.items().front().toString("run.yaml"),
            std::string("run.yaml:5:18: training.learning_rate: got -0.1, expected a "
                        "positive number"));
    }

    void suggestsNearestName_data()
    {
        QTest::addColumn<QString>("yaml");
        QTest::addColumn<QString>("hint");
        const QString base = QString::fromUtf8(kMinimal);
        QTest::addRow("top key") << base + "modl: x\n"
                                 << "did you mean model?";
        QTest::addRow("training key") << base + "training:\n  learning_rat: 0.1\n"
                                      << "did you mean learning_rate?";
        QTest::addRow("choice") << base + "method: lorra\n"
                                << "did you mean lora?";
        QTest::addRow("module") << base + "lora:\n  target_modules: [gateproj]\n"
                                << "did you mean gate_proj?";
        QTest::addRow("far key lists known keys") << base + "xyzzy: 1\n"
                                                  << "known keys at the top level: name, model";
    }
    void suggestsNearestName()
    {
        QFETCH(QString, yaml);
        QFETCH(QString, hint);
        const LoadReport report = parse(yaml.toStdString());
        QVERIFY(!report.ok());
        QVERIFY2(QString::fromStdString(report.problems.items().front().hint).contains(hint),
            problemsText(report).c_str());
    }

    void reportsEveryProblemAtOnce()
    {
        const std::string text = "model: m\n"
                                 "method: lorra\n"
                                 "data:\n"
                                 "  train: t.jsonl\n"
                                 "  sequence_length: 0\n"
                                 "training:\n"
                                 "  learning_rate: -1\n"
                                 "  micro_batch: two\n"
                                 "output:\n"
                                 "  keep_lst: 3\n";
        const LoadReport report = parse(text);
        QVERIFY(!report.ok());
        std::set<std::string> paths;
        for (const ConfigProblem& problem : report.problems.items())
            paths.insert(problem.yamlPath);
        const std::set<std::string> expected{"method", "data.sequence_length",
            "training.learning_rate", "training.micro_batch", "output.keep_lst"};
        QCOMPARE(paths, expected);
        QVERIFY(report.error().toString().find("5 problems") != std::string::npos);
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
        LoadOptions options;
        // The recipes name the shared stories260K model; its absence is not
        // the recipe's fault, so the paths are only checked when it is there.
        options.checkPaths = sharedModelPresent();
        const LoadReport report = readRunConfigFile(recipePath(qPrintable(file)), options);
        QVERIFY2(report.ok(), problemsText(report).c_str());
        QVERIFY2(report.warnings.isEmpty(), report.warnings.toError("").toString().c_str());
        const RunConfig& config = *report.config;
        QCOMPARE(QString::fromUtf8(toString(config.method).data()), method);
        QCOMPARE(config.name, file.chopped(5).toStdString());
        QVERIFY(config.model.ends_with("shared/data/models/stories260K"));
        QVERIFY(std::filesystem::is_regular_file(config.data.trainFiles.at(0)));
        QVERIFY(config.data.trainFiles.at(0).ends_with("resources/demo/tiny_instructions.jsonl"));
        QVERIFY(config.hasValidationData());
        if (!sharedModelPresent())
            QSKIP("shared stories260K model absent: paths not checked");
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
        const auto docs = tb::common::readFile(std::string(TB_SOURCE_DIR) + "/docs/RUN_CONFIG.md");
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
    }
};

QTEST_GUILESS_MAIN(TestConfig)
#include "test_config.moc"
