// `tunebench-cli tokenize` as a user meets it: the real binary, stdin in,
// ids or counts out, exit status 2 with the file and field on bad input.
#include "../support/cli_outcome.h"
#include "../support/qt_test_paths.h"
#include "fixtures.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

namespace {

using Outcome = tb::test::CliOutcome;

Outcome runCli(const QStringList& arguments, const QByteArray& input = {})
{
    tb::test::ProgramSetup setup;
    setup.input = input;
    return tb::test::runProgram(QString::fromUtf8(tb::test::cliProgram()),
        QStringList{"tokenize"} + arguments, 30'000, setup);
}

void writeFile(const QString& path, const QByteArray& content)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(content);
}

} // namespace

class TestTokenizeCommand : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void printsIds_data();
    void printsIds();
    void printsJson();
    void decodes();
    void countsDataset();
    void rejectsBadInput_data();
    void rejectsBadInput();

private:
    QTemporaryDir m_dir;
    QString m_tokenizer;
};

void TestTokenizeCommand::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_tokenizer = m_dir.filePath("tokenizer.json");
    writeFile(m_tokenizer, tb::tokenizer::test::kTinyTokenizer);
}

void TestTokenizeCommand::printsIds_data()
{
    QTest::addColumn<QStringList>("options");
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("output");
    QTest::addRow("with BOS") << QStringList{} << QByteArray("ab a") << "1 10 8\n";
    QTest::addRow("no special") << QStringList{"--no-special"} << QByteArray("ab a") << "10 8\n";
    QTest::addRow("empty stdin") << QStringList{} << QByteArray() << "1\n";
    // The tiny vocabulary has no <0x0A>: the newline is read and becomes <unk>.
    QTest::addRow("newline is text") << QStringList{"--no-special"} << QByteArray("a\n") << "8 0\n";
}

void TestTokenizeCommand::printsIds()
{
    QFETCH(QStringList, options);
    QFETCH(QByteArray, input);
    QFETCH(QString, output);
    const Outcome outcome = runCli(QStringList{"--tokenizer", m_tokenizer} + options, input);
    QCOMPARE(outcome.exitCode, 0);
    QCOMPARE(outcome.out, output);
}

void TestTokenizeCommand::printsJson()
{
    const Outcome outcome = runCli({"--tokenizer", m_dir.path(), "--json"}, "ab a");
    QCOMPARE(outcome.exitCode, 0);
    const QJsonObject json = QJsonDocument::fromJson(outcome.out.toUtf8()).object();
    QCOMPARE(json["count"].toInt(), 3);
    QCOMPARE(json["ids"].toArray(), (QJsonArray{1, 10, 8}));
    QCOMPARE(json["tokens"].toArray(), (QJsonArray{"<s>", "▁ab", "▁a"}));
}

void TestTokenizeCommand::decodes()
{
    Outcome outcome = runCli({"--tokenizer", m_tokenizer, "--decode"}, "1 10 8");
    QCOMPARE(outcome.exitCode, 0);
    QCOMPARE(outcome.out, QStringLiteral("<s> ab a\n"));
    outcome = runCli({"--tokenizer", m_tokenizer, "--decode", "--no-special"}, "[1, 10, 8]");
    QCOMPARE(outcome.out, QStringLiteral("ab a\n"));
    outcome = runCli({"--tokenizer", m_tokenizer, "--decode"}, "1 77 8");
    QCOMPARE(outcome.exitCode, 2);
    QVERIFY2(
        outcome.err.contains("got '77', expected token ids from 0 to 10"), qPrintable(outcome.err));
}

void TestTokenizeCommand::countsDataset()
{
    const QString data = m_dir.filePath("data.jsonl");
    writeFile(data, "{\"instruction\": \"a\", \"output\": \"ab a\"}\n{\"text\": \"b\"}\n");
    const Outcome outcome = runCli({"--tokenizer", m_tokenizer, "--count", data, "--json"});
    QCOMPARE(outcome.exitCode, 0);
    const QJsonObject json = QJsonDocument::fromJson(outcome.out.toUtf8()).object();
    QCOMPARE(json["format"].toString(), QStringLiteral("jsonl"));
    QCOMPARE(json["records"].toInt(), 2);
    QCOMPARE(json["tokens"].toInt(), 5);
    QCOMPARE(json["tokens_with_special"].toInt(), 7);
    QCOMPARE(json["max_tokens_per_record"].toInt(), 4);
    QCOMPARE(json["tokens_by_field"].toObject()["output"].toInt(), 2);

    const QString stories = tb::test::qDemoModelDir();
    const QString val = tb::test::qTestDatasetsPath("tinystories/tinystories_val_first800.txt");
    const Outcome text = runCli({"--tokenizer", stories, "--count", val});
    QCOMPARE(text.exitCode, 0);
    QVERIFY2(
        text.out.contains("(text, ") && text.out.contains("per record mean"), qPrintable(text.out));
}

void TestTokenizeCommand::rejectsBadInput_data()
{
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<QString>("message");
    QTest::addRow("no tokenizer") << QStringList{} << "--tokenizer PATH is required";
    QTest::addRow("missing tokenizer")
        << QStringList{"--tokenizer", "/nonexistent/x.json"} << "/nonexistent/x.json: no such file";
    QTest::addRow("unknown option")
        << QStringList{"--tokenizer", "T", "--frobnicate"} << "unknown option '--frobnicate'";
    QTest::addRow("bad tokenizer field")
        << QStringList{"--tokenizer", "BAD"} << "bad.json: field 'model.merges[1]': got 5";
    QTest::addRow("bad dataset record")
        << QStringList{"--tokenizer", "T", "--count", "DATA"} << "data.jsonl:2: no text field";
    QTest::addRow("missing dataset") << QStringList{"--tokenizer", "T", "--count", "/no/such.txt"}
                                     << "/no/such.txt: cannot open the dataset file";
}

void TestTokenizeCommand::rejectsBadInput()
{
    QFETCH(QStringList, arguments);
    QFETCH(QString, message);
    const QString bad = m_dir.filePath("bad.json");
    QByteArray broken(tb::tokenizer::test::kTinyTokenizer);
    broken.replace("\"a b\"", "5");
    writeFile(bad, broken);
    const QString data = m_dir.filePath("data.jsonl");
    writeFile(data, "{\"text\": \"a\"}\n{\"label\": 1}\n");
    for (QString& argument : arguments) {
        if (argument == "T")
            argument = m_tokenizer;
        else if (argument == "BAD")
            argument = bad;
        else if (argument == "DATA")
            argument = data;
    }
    const Outcome outcome = runCli(arguments);
    QCOMPARE(outcome.exitCode, 2);
    QVERIFY2(outcome.err.contains(message), qPrintable(outcome.err));
}

QTEST_GUILESS_MAIN(TestTokenizeCommand)
#include "test_tokenize_command.moc"
