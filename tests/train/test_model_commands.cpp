#include "../support/cli_outcome.h"
#include "../support/qt_test_paths.h"
#include "common/atomic_file.h"

#include <nlohmann/json.hpp>

#include <QTest>

#include <filesystem>

// tunebench-cli eval and generate as a user runs them, on stories260K.
namespace {

using Run = tb::test::CliOutcome;

Run cli(const QStringList& arguments)
{
    return tb::test::runProgram(tb::test::qBuildPath("app/cli/tunebench-cli"), arguments, 120000);
}

const QString kModel = tb::test::qDemoModelDir();
const QString kData = tb::test::qTestDatasetsPath("tinystories/tinystories_val_first800.txt");

} // namespace

class TestModelCommands : public QObject {
    Q_OBJECT

private:
    nlohmann::json m_reference;

private slots:
    void initTestCase()
    {
        const auto text = tb::common::readFile(kModel.toStdString() + "/reference_outputs.json");
        QVERIFY(text.ok());
        m_reference = nlohmann::json::parse(*text);
    }

    void evalReproducesTheReferenceLoss()
    {
        const Run run = cli({"eval", "--model", kModel, "--data", kData, "--limit", "200", "--json",
            "--threads", "1", "--batch", "16"});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        const auto result = nlohmann::json::parse(run.out.toStdString());
        const auto& expected = m_reference["tinystories_val_first200_paragraphs"];
        QCOMPARE(result["documents"].get<int>(), 200);
        QCOMPARE(result["predicted_tokens"].get<std::int64_t>(),
            expected["n_predicted_tokens"].get<std::int64_t>());
        QVERIFY(
            std::abs(result["mean_loss"].get<double>() - expected["mean_nll_nats"].get<double>())
            < 2e-5);
        QVERIFY(std::abs(result["perplexity"].get<double>()
                    - std::exp(result["mean_loss"].get<double>()))
            < 1e-9);
        QCOMPARE(result["seq_len"].get<int>(), 512);
    }

    void evalPrintsAReadableSummary()
    {
        const Run run =
            cli({"eval", "--model", kModel, "--data", kData, "--limit", "1", "--threads", "1"});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QVERIFY2(run.out.contains("mean loss   1.419665 nats/token over 84 predicted tokens"),
            qPrintable(run.out));
        QVERIFY(run.out.contains("perplexity  4.1357"));
    }

    void greedyGenerationMatchesTheReference()
    {
        const Run run = cli({"generate", "--model", kModel, "--prompt", "Once upon a time",
            "--max-new-tokens", "40", "--threads", "1"});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        QCOMPARE(run.out,
            QString::fromStdString(m_reference["greedy_40_text"].get<std::string>()) + "\n");
        QVERIFY(run.err.contains("stopped: max_new_tokens"));
    }

    void sampledGenerationRepeatsWithItsSeed()
    {
        const QStringList arguments = {"generate", "--model", kModel, "--prompt", "Tom and Sue",
            "--temperature", "0.9", "--top-p", "0.95", "--seed", "5", "--json", "--threads", "1",
            "--max-new-tokens", "30"};
        const Run first = cli(arguments);
        const Run again = cli(arguments);
        QVERIFY2(first.exitCode == 0, qPrintable(first.err));
        const auto a = nlohmann::json::parse(first.out.toStdString());
        const auto b = nlohmann::json::parse(again.out.toStdString());
        QVERIFY(a["ids"] == b["ids"]);
        QVERIFY(!a["text"].get<std::string>().empty());
        QCOMPARE(a["prompt_ids"].front().get<int>(), 1); // BOS
    }

    void badInputExitsWithUsage_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("expected");
        QTest::addRow("no data") << QStringList{"eval", "--model", kModel}
                                 << "--model and --data are required";
        QTest::addRow("no model folder")
            << QStringList{"eval", "--model", "/nonexistent", "--data", kData} << "/nonexistent";
        QTest::addRow("seq-len past context") << QStringList{"eval", "--model", kModel, "--data",
            kData, "--seq-len", "1000"} << "seq-len";
        QTest::addRow("dtype") << QStringList{"eval", "--model", kModel, "--data", kData, "--dtype",
            "fp8"} << "unknown dtype 'fp8'";
        QTest::addRow("missing data file") << QStringList{"eval", "--model", kModel, "--data",
            "/nonexistent.txt"} << "/nonexistent.txt";
        QTest::addRow("no prompt")
            << QStringList{"generate", "--model", kModel} << "--prompt are required";
        QTest::addRow("top-p") << QStringList{"generate", "--model", kModel, "--prompt", "a",
            "--top-p", "2"} << "top-p";
    }
    void badInputExitsWithUsage()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, expected);
        const Run run = cli(arguments);
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.err.contains(expected), qPrintable(run.err));
    }

    void helpDescribesTheOptions()
    {
        for (const char* command : {"eval", "generate"}) {
            const Run run = cli({command, "--help"});
            QCOMPARE(run.exitCode, 0);
            QVERIFY(run.out.contains("--model"));
        }
    }
};

QTEST_GUILESS_MAIN(TestModelCommands)
#include "test_model_commands.moc"
