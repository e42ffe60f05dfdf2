#include "config/config_loader.h"
#include "config_test_util.h"

#include <QTest>

#include <set>

using namespace tb::config;
using namespace configtest;

// Validation of the run config: every wrong value, type, key and
// combination is reported with its YAML path, file, line and column, all
// problems at once, with a suggestion for misspelt keys.
class TestConfigValidation : public QObject {
    Q_OBJECT

private slots:
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
                                        << "got \"2\", expected an integer from 1 to 65536" << 5;
        QTest::addRow("zero micro batch") << base + "training:\n  micro_batch: 0\n"
                                          << "training.micro_batch"
                                          << "got 0" << 5;
        QTest::addRow("fractional accumulation") << base + "training:\n  grad_accum: 1.5\n"
                                                 << "training.grad_accum"
                                                 << "expected an integer from 1 to 65536" << 5;
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
        QTest::addRow("planner-only precision")
            << base + "precision: fp16-mixed\n"
            << "precision"
            << "got fp16-mixed, expected fp32, bf16-mixed or bf16" << 4;
        QTest::addRow("bad device") << base + "device: gpu\n"
                                    << "device"
                                    << "expected cpu, cuda or auto" << 4;
        QTest::addRow("checkpointing not bool") << base + "activation_checkpointing: maybe\n"
                                                << "activation_checkpointing"
                                                << "expected true or false" << 4;
        QTest::addRow("bad format") << base + "  format: parquet\n"
                                    << "data.format"
                                    << "expected alpaca, chat, csv, text or preference" << 4;
        QTest::addRow("bad template")
            << base + "  template: llama2\n"
            << "data.template"
            << "expected auto, model, alpaca, llama3, chatml, mistral or none" << 4;
        QTest::addRow("chat with alpaca template") << base + "  format: chat\n  template: alpaca\n"
                                                   << "data.template"
                                                   << "chat data needs a chat template" << 5;
        QTest::addRow("text with chat template") << base + "  format: text\n  template: chatml\n"
                                                 << "data.template"
                                                 << "plain text has no prompts" << 5;
        QTest::addRow("short sequence") << base + "  sequence_length: 1\n"
                                        << "data.sequence_length"
                                        << "from 2 to 16777216" << 4;
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
        // The LoRA and batch ranges are the planner's (common/training_limits.h).
        QTest::addRow("rank past the planner's") << base + "lora:\n  rank: 65537\n"
                                                 << "lora.rank"
                                                 << "expected an integer from 1 to 65536" << 5;
        QTest::addRow("negative alpha") << base + "lora:\n  alpha: -1\n"
                                        << "lora.alpha"
                                        << "expected a number from 0.01 to 1e+06" << 5;
        QTest::addRow("dropout of one") << base + "lora:\n  dropout: 1.0\n"
                                        << "lora.dropout"
                                        << "expected a number from 0 to 0.99" << 5;
        QTest::addRow("micro batch past the planner's")
            << base + "training:\n  micro_batch: 65537\n"
            << "training.micro_batch"
            << "expected an integer from 1 to 65536" << 5;
        QTest::addRow("unknown module") << base + "lora:\n  target_modules: [q_proj, qproj]\n"
                                        << "lora.target_modules"
                                        << "got \"qproj\"" << 5;
        QTest::addRow("module twice") << base + "lora:\n  target_modules: [q_proj, q_proj]\n"
                                      << "lora.target_modules"
                                      << "listed twice" << 5;
        QTest::addRow("no modules") << base + "lora:\n  target_modules: []\n"
                                    << "lora.target_modules"
                                    << "expected a list of module" << 5;
        // peft refuses dropout on LoRA over the experts' weights.
        QTest::addRow("expert weights with dropout")
            << base + "lora:\n  dropout: 0.1\n  target_parameters: [mlp.experts.down_proj]\n"
            << "lora.dropout"
            << "got 0.1, expected 0 with target_parameters" << 5;
        QTest::addRow("expert weight twice")
            << base + "lora:\n  dropout: 0\n  target_parameters: [gate_up_proj, gate_up_proj]\n"
            << "lora.target_parameters"
            << "listed twice" << 6;
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
        QTest::addRow("bad sharding")
            << base + "distributed:\n  sharding: zero4\n"
            << "distributed.sharding"
            << "got zero4, expected ddp, zero1, zero2, zero3, fsdp-full, fsdp-grad-op or "
               "fsdp-hybrid"
            << 5;
        QTest::addRow("upper-case sharding") << base + "distributed:\n  sharding: FULL_SHARD\n"
                                             << "distributed.sharding"
                                             << "got FULL_SHARD" << 5;
        QTest::addRow("sharding list") << base + "distributed:\n  sharding: [ddp]\n"
                                       << "distributed.sharding"
                                       << "got a list" << 5;
        QTest::addRow("bad offload")
            << base + "distributed:\n  offload: cpu\n"
            << "distributed.offload"
            << "got cpu, expected none, optimizer or optimizer+params" << 5;
        QTest::addRow("param offload with ddp")
            << base + "distributed:\n  sharding: ddp\n  offload: optimizer+params\n"
            << "distributed.offload"
            << "got optimizer+params with sharding ddp, which keeps every parameter" << 6;
        QTest::addRow("param offload with default sharding")
            << base + "distributed:\n  offload: optimizer+params\n"
            << "distributed.offload"
            << "got optimizer+params with sharding ddp" << 5;
        QTest::addRow("optimizer offload with fsdp")
            << base + "distributed:\n  sharding: fsdp-full\n  offload: optimizer\n"
            << "distributed.offload"
            << "FSDP's CPU offload moves parameters, gradients and optimizer states together" << 6;
        QTest::addRow("param offload with zero1")
            << base + "distributed:\n  offload: params\n  sharding: zero1\n"
            << "distributed.offload"
            << "got optimizer+params with sharding zero1" << 5;
        QTest::addRow("param offload with zero2 alias")
            << base + "distributed:\n  sharding: zero-2\n  offload: all\n"
            << "distributed.offload"
            << "got optimizer+params with sharding zero2" << 6;
        QTest::addRow("zero timeout") << base + "distributed:\n  timeout_seconds: 0\n"
                                      << "distributed.timeout_seconds"
                                      << "got 0, expected a positive number of seconds" << 5;
        QTest::addRow("negative timeout") << base + "distributed:\n  timeout_seconds: -30\n"
                                          << "distributed.timeout_seconds"
                                          << "got -30" << 5;
        QTest::addRow("infinite timeout") << base + "distributed:\n  timeout_seconds: .inf\n"
                                          << "distributed.timeout_seconds"
                                          << "got .inf" << 5;
        QTest::addRow("nan timeout") << base + "distributed:\n  timeout_seconds: .nan\n"
                                     << "distributed.timeout_seconds"
                                     << "got .nan" << 5;
        QTest::addRow("timeout above a day") << base + "distributed:\n  timeout_seconds: 1e9\n"
                                             << "distributed.timeout_seconds"
                                             << "at most 86400" << 5;
        QTest::addRow("timeout with unit") << base + "distributed:\n  timeout_seconds: 5m\n"
                                           << "distributed.timeout_seconds"
                                           << "got 5m" << 5;
        QTest::addRow("quoted timeout") << base + "distributed:\n  timeout_seconds: \"300\"\n"
                                        << "distributed.timeout_seconds"
                                        << "got \"300\"" << 5;
        QTest::addRow("unknown distributed key") << base + "distributed:\n  backend: nccl\n"
                                                 << "distributed.backend"
                                                 << "unknown key under distributed" << 5;
        QTest::addRow("distributed not a mapping") << base + "distributed: zero3\n"
                                                   << "distributed"
                                                   << "got zero3, expected a mapping of keys" << 4;
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
        // yaml-cpp 0.7 never gets past this (jbeder/yaml-cpp#1040); it must
        // be a problem, not an endless allocation.
        QTest::addRow("stuck yaml parser") << "# comment\n  , the rest\n" + base << ""
                                           << "not valid YAML" << 2;
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
        QTest::addRow("distributed key") << base + "distributed:\n  timeout_secs: 60\n"
                                         << "did you mean timeout_seconds?";
        QTest::addRow("far distributed key")
            << base + "distributed:\n  timeout: 60\n"
            << "known keys under distributed: sharding, offload or timeout_seconds";
        QTest::addRow("sharding") << base + "distributed:\n  sharding: fsdp-ful\n"
                                  << "did you mean fsdp-full?";
        QTest::addRow("parameter offload") << base + "distributed:\n  offload: optimizer+params\n"
                                           << "parameter offload needs sharding zero3";
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

    void wrongShardingHidesTheOffloadRule()
    {
        // The sharding that was not read keeps its default, ddp; that must
        // not add a second problem about the (valid) offload.
        const LoadReport report = parse(std::string(kMinimal)
            + "distributed:\n  sharding: zero-4\n  offload: optimizer+params\n");
        QCOMPARE(report.problems.size(), size_t(1));
        QCOMPARE(report.problems.items().front().yamlPath, std::string("distributed.sharding"));
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
};

QTEST_GUILESS_MAIN(TestConfigValidation)
#include "test_config_validation.moc"
