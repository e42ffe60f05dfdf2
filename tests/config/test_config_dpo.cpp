#include "config/config_loader.h"
#include "config/config_writer.h"
#include "config_test_util.h"

#include "../support/test_data.h"

#include <QTest>

#include <filesystem>

using namespace tb::config;
using namespace configtest;

// The run config of preference tuning: objective dpo, its dpo section (TRL's
// defaults, ranges) and the combinations it refuses, each problem at its
// YAML path and line.
class TestConfigDpo : public QObject {
    Q_OBJECT

    // A DPO run that loads: lora, preference pairs. Rows add one line.
    static QString dpoBase()
    {
        return "model: models/tiny\n"
               "objective: dpo\n"
               "data:\n"
               "  train: pairs.jsonl\n"
               "  format: preference\n";
    }

private slots:
    void readsDefaultsAsTrl()
    {
        const LoadReport report = parse(dpoBase().toStdString());
        QVERIFY2(report.ok(), problemsText(report).c_str());
        const RunConfig& config = *report.config;
        QVERIFY(config.objective == Objective::Dpo);
        QVERIFY(config.isPreferenceTuning());
        QCOMPARE(config.dpo.beta, 0.1);
        QVERIFY(config.dpo.lossType == DpoLossType::Sigmoid);
        QCOMPARE(config.dpo.labelSmoothing, 0.0);
        QCOMPARE(config.data.packing, false);
        // An SFT config says nothing of DPO and is read as before.
        const LoadReport sft = parse(kMinimal);
        QVERIFY(sft.ok());
        QVERIFY(sft.config->objective == Objective::Sft);
    }

    void readsSettings_data()
    {
        QTest::addColumn<QString>("dpo");
        QTest::addColumn<double>("beta");
        QTest::addColumn<int>("lossType");
        QTest::addColumn<double>("labelSmoothing");
        QTest::addRow("ipo") << "dpo:\n  beta: 0.5\n  loss_type: ipo\n"
                             << 0.5 << int(DpoLossType::Ipo) << 0.0;
        QTest::addRow("conservative") << "dpo:\n  label_smoothing: 0.2\n"
                                      << 0.1 << int(DpoLossType::Sigmoid) << 0.2;
        QTest::addRow("robust") << "dpo:\n  loss_type: robust\n  label_smoothing: 0.1\n  beta: 2\n"
                                << 2.0 << int(DpoLossType::Robust) << 0.1;
    }
    void readsSettings()
    {
        QFETCH(QString, dpo);
        QFETCH(double, beta);
        QFETCH(int, lossType);
        QFETCH(double, labelSmoothing);
        const LoadReport report = parse((dpoBase() + dpo).toStdString());
        QVERIFY2(report.ok(), problemsText(report).c_str());
        QCOMPARE(report.config->dpo.beta, beta);
        QCOMPARE(int(report.config->dpo.lossType), lossType);
        QCOMPARE(report.config->dpo.labelSmoothing, labelSmoothing);
        // Written and read back the same.
        const LoadReport again = parse(toYaml(*report.config));
        QVERIFY2(again.ok(), problemsText(again).c_str());
        QVERIFY(again.config->dpo == report.config->dpo);
        QVERIFY(again.config->objective == Objective::Dpo);
    }

    void rejects_data()
    {
        QTest::addColumn<QString>("yaml");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("line");
        const QString base = dpoBase(); // 5 lines
        QTest::addRow("zero beta") << base + "dpo:\n  beta: 0\n"
                                   << "dpo.beta"
                                   << "got 0, expected a positive number" << 7;
        QTest::addRow("negative beta") << base + "dpo:\n  beta: -1\n"
                                       << "dpo.beta"
                                       << "expected a positive number" << 7;
        QTest::addRow("unknown loss") << base + "dpo:\n  loss_type: hinge\n"
                                      << "dpo.loss_type"
                                      << "expected sigmoid, ipo or robust" << 7;
        QTest::addRow("smoothing of a half") << base + "dpo:\n  label_smoothing: 0.5\n"
                                             << "dpo.label_smoothing"
                                             << "expected a number in [0, 0.5)" << 7;
        QTest::addRow("negative smoothing") << base + "dpo:\n  label_smoothing: -0.1\n"
                                            << "dpo.label_smoothing"
                                            << "expected a number in [0, 0.5)" << 7;
        QTest::addRow("ipo with smoothing")
            << base + "dpo:\n  loss_type: ipo\n  label_smoothing: 0.1\n"
            << "dpo.label_smoothing"
            << "the ipo loss has no label smoothing" << 8;
        QTest::addRow("unknown key") << base + "dpo:\n  betta: 0.2\n"
                                     << "dpo.betta"
                                     << "" << 7;
        QTest::addRow("unknown objective")
            << QString("model: m\nobjective: kto\ndata:\n  train: t\n") << "objective"
            << "expected sft or dpo" << 2;
        QTest::addRow("dpo on instructions")
            << QString("model: m\nobjective: dpo\ndata:\n  train: t\n  format: alpaca\n")
            << "data.format"
            << "objective dpo trains on preference pairs" << 5;
        QTest::addRow("dpo on the default format")
            << QString("model: m\nobjective: dpo\ndata:\n  train: t\n") << "objective"
            << "data.format is alpaca" << 2;
        QTest::addRow("pairs without dpo") << QString(kMinimal) + "  format: preference\n"
                                           << "data.format"
                                           << "preference pairs train with objective dpo" << 4;
        QTest::addRow("full fine-tune") << base + "method: full\n"
                                        << "method"
                                        << "needs a reference model" << 6;
        QTest::addRow("packed pairs") << base + "  packing: true\n"
                                      << "data.packing"
                                      << "cannot be packed" << 6;
        QTest::addRow("chat template") << base + "  template: llama3\n"
                                       << "data.template"
                                       << "expected auto, model or none" << 6;
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
            if (QString::fromStdString(problem.yamlPath) == path
                && QString::fromStdString(problem.message).contains(message)) {
                found = true;
                QCOMPARE(problem.line, line);
            }
        }
        QVERIFY2(found, problemsText(report).c_str());
    }

    // presets/recipes/dpo.yaml names the demo model and the demo pairs that
    // ship beside it, and loads without a warning.
    void recipeLoads()
    {
        LoadOptions options;
        options.checkPaths = true;
        const LoadReport report =
            readRunConfigFile(tb::test::sourcePath("presets/recipes/dpo.yaml"), options);
        QVERIFY2(report.ok(), problemsText(report).c_str());
        QVERIFY2(report.warnings.isEmpty(), report.warnings.toError("").toString().c_str());
        const RunConfig& config = *report.config;
        QVERIFY(config.isPreferenceTuning());
        QVERIFY(config.method == Method::Lora);
        QVERIFY(config.data.format == DataFormat::Preference);
        QVERIFY(config.data.trainFiles.at(0).ends_with("resources/demo/tiny_preferences.jsonl"));
        QVERIFY(std::filesystem::is_regular_file(config.data.trainFiles.at(0)));
        QCOMPARE(std::filesystem::weakly_canonical(config.model).string(),
            std::filesystem::weakly_canonical(tb::test::demoModelDir()).string());
    }

    void warnsWhenDpoIsIgnored()
    {
        const LoadReport report = parse(std::string(kMinimal) + "dpo:\n  beta: 0.3\n");
        QVERIFY2(report.ok(), problemsText(report).c_str());
        bool warned = false;
        for (const ConfigProblem& warning : report.warnings.items())
            warned = warned
                || (warning.yamlPath == "dpo"
                    && warning.message.find("ignored") != std::string::npos);
        QVERIFY(warned);
    }
};

QTEST_GUILESS_MAIN(TestConfigDpo)
#include "test_config_dpo.moc"
