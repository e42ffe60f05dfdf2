// Unit tests of tb::tokenizer that need neither node nor network: the
// stories260K reference ids (computed with SentencePiece, independently of
// HF), tokenizer_config.json, invalid UTF-8, the Oniguruma-compatible regex
// rewrite, thread safety, and the dataset token counter.
#include "../support/deep_json.h"
#include "../support/qt_test_paths.h"
#include "fixtures.h"
#include "tokenizer/dataset_count.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <thread>

using tb::tokenizer::TokenId;
using tb::tokenizer::Tokenizer;
namespace detail = tb::tokenizer::detail;

namespace {

const QString kStoriesDir = tb::test::qDemoModelDir();

Tokenizer tinyTokenizer()
{
    auto loaded = Tokenizer::fromJson(tb::tokenizer::test::kTinyTokenizer, "tiny.json");
    if (!loaded)
        qFatal("%s", loaded.error().toString().c_str());
    return loaded.value();
}

void writeFile(const QString& path, const std::string& content)
{
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << content;
}

} // namespace

class TestTokenizer : public QObject {
    Q_OBJECT

private slots:
    void tinyEncodeDecode_data();
    void tinyEncodeDecode();
    void storiesReferenceIds();
    void storiesConfig();
    void configForms_data();
    void configForms();
    void lossyUtf8_data();
    void lossyUtf8();
    void invalidUtf8Input();
    void regexRewrite_data();
    void regexRewrite();
    void regexMatches_data();
    void regexMatches();
    void vocabularyLookups();
    void concurrentEncode();
    void datasetCounts_data();
    void datasetCounts();
    void datasetErrors_data();
    void datasetErrors();
};

void TestTokenizer::tinyEncodeDecode_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QList<int>>("ids");
    QTest::addColumn<QString>("decoded");
    QTest::addRow("merges") << "ab a" << QList<int>{1, 10, 8} << "<s> ab a";
    QTest::addRow("byte fallback") << "é" << QList<int>{1, 5, 3, 4} << "<s> é";
    QTest::addRow("fused unknown") << "xyz" << QList<int>{1, 5, 0} << "<s> <unk>";
    QTest::addRow("special token splits normalization")
        << "a<s>b" << QList<int>{1, 8, 1, 5, 7} << "<s> a<s> b";
    QTest::addRow("empty") << "" << QList<int>{1} << "<s>";
}

void TestTokenizer::tinyEncodeDecode()
{
    QFETCH(QString, text);
    QFETCH(QList<int>, ids);
    QFETCH(QString, decoded);
    const Tokenizer tok = tinyTokenizer();
    const auto got = tok.encode(text.toStdString());
    QCOMPARE(QList<int>(got.begin(), got.end()), ids);
    QCOMPARE(QString::fromStdString(tok.decode(got)), decoded);
    const auto plain = tok.encode(text.toStdString(), false);
    QCOMPARE(QList<int>(plain.begin(), plain.end()), ids.mid(1));
    QCOMPARE(tok.countTokens(text.toStdString()), static_cast<std::size_t>(ids.size()));
}

void TestTokenizer::storiesReferenceIds()
{
    QFile file(kStoriesDir + "/reference_outputs.json");
    QVERIFY(file.open(QIODevice::ReadOnly));
    const auto reference = nlohmann::json::parse(file.readAll().toStdString());
    const auto loaded = Tokenizer::load(kStoriesDir.toStdString());
    QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
    const Tokenizer& tok = loaded.value();
    // Ids computed with SentencePiece from tokenizer.model, not with HF.
    QCOMPARE(tok.encode(reference["prompt"].get<std::string>()),
        reference["prompt_ids_with_bos"].get<std::vector<TokenId>>());
    auto ids = reference["prompt_ids_with_bos"].get<std::vector<TokenId>>();
    for (TokenId id : reference["greedy_40_ids"].get<std::vector<TokenId>>())
        ids.push_back(id);
    QCOMPARE(tok.decode(ids, true), reference["greedy_40_text"].get<std::string>());
    QCOMPARE(tok.vocabSize(), std::size_t(512));
}

void TestTokenizer::storiesConfig()
{
    const auto loaded = Tokenizer::load((kStoriesDir + "/tokenizer.json").toStdString());
    QVERIFY(loaded.ok());
    const Tokenizer& tok = loaded.value();
    QVERIFY(tok.config().present);
    QCOMPARE(tok.bosId(), std::optional<TokenId>(1));
    QCOMPARE(tok.eosId(), std::optional<TokenId>(2));
    QCOMPARE(tok.padId(), std::optional<TokenId>());
    QCOMPARE(tok.config().addBosToken, std::optional<bool>(true));
    QCOMPARE(tok.config().addEosToken, std::optional<bool>(false));
    QCOMPARE(tok.config().modelMaxLength, std::optional<long long>(512));
    QVERIFY(!tok.config().hasChatTemplate);
    QVERIFY(tok.isSpecial(1));
    QVERIFY(!tok.isSpecial(300));
}

void TestTokenizer::configForms_data()
{
    QTest::addColumn<QString>("config");
    QTest::addColumn<int>("eos");
    QTest::addColumn<bool>("chatTemplate");
    QTest::addRow("string tokens")
        << R"({"eos_token": "</s>", "chat_template": "{{ x }}"})" << 2 << true;
    QTest::addRow("AddedToken object")
        << R"({"eos_token": {"content": "</s>", "lstrip": false}, "model_max_length": 1e30})" << 2
        << false;
    QTest::addRow("template list")
        << R"({"chat_template": [{"name": "default", "template": "x"}]})" << -1 << true;
    QTest::addRow("unknown token") << R"({"eos_token": "<|nope|>"})" << -1 << false;
}

void TestTokenizer::configForms()
{
    QFETCH(QString, config);
    QFETCH(int, eos);
    QFETCH(bool, chatTemplate);
    QTemporaryDir dir;
    writeFile(dir.filePath("tokenizer.json"), tb::tokenizer::test::kTinyTokenizer);
    writeFile(dir.filePath("tokenizer_config.json"), config.toStdString());
    const auto loaded = Tokenizer::load(dir.path().toStdString());
    QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
    QCOMPARE(loaded.value().eosId(), eos < 0 ? std::nullopt : std::optional<TokenId>(eos));
    QCOMPARE(loaded.value().config().hasChatTemplate, chatTemplate);
}

void TestTokenizer::lossyUtf8_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QByteArray>("expected");
    const QByteArray r = "\xEF\xBF\xBD";
    QTest::addRow("valid") << QByteArray("a\xC3\xA9z") << QByteArray("a\xC3\xA9z");
    QTest::addRow("lone continuation") << QByteArray("a\x80z") << "a" + r + "z";
    QTest::addRow("overlong C0") << QByteArray("\xC0\xAF") << r + r;
    QTest::addRow("truncated 4-byte at end") << QByteArray("x\xF0\x9F\x98") << "x" + r;
    QTest::addRow("truncated 3-byte before ASCII") << QByteArray("\xE1\x80"
                                                                 "A")
                                                   << r + "A";
    QTest::addRow("surrogate") << QByteArray("\xED\xA0\x80") << r + r + r;
    QTest::addRow("above U+10FFFF") << QByteArray("\xF4\x90\x80\x80") << r + r + r + r;
    QTest::addRow("FF byte") << QByteArray("\xFF") << r;
}

void TestTokenizer::lossyUtf8()
{
    QFETCH(QByteArray, input);
    QFETCH(QByteArray, expected);
    const std::string out = detail::toValidUtf8(input.toStdString());
    QCOMPARE(QByteArray::fromStdString(out), expected);
    QVERIFY(detail::isValidUtf8(out));
    QCOMPARE(detail::isValidUtf8(input.toStdString()), input == expected);
}

void TestTokenizer::invalidUtf8Input()
{
    const Tokenizer tok = tinyTokenizer();
    // Bad bytes read as U+FFFD, like a lossy decode; never a crash.
    QCOMPARE(tok.encode("a\xFF"
                        "b"),
        tok.encode("a\xEF\xBF\xBD"
                   "b"));
    QCOMPARE(tok.encode(std::string("\xC3", 1)), tok.encode("\xEF\xBF\xBD"));
}

void TestTokenizer::regexRewrite_data()
{
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<QString>("pcre2");
    QTest::addRow("\\s alone") << R"(\s+)"
                               << R"([\s\x{85}]+)";
    QTest::addRow("\\S in lookahead") << R"(\s+(?!\S))"
                                      << R"([\s\x{85}]+(?![^\s\x{85}]))";
    QTest::addRow("\\s in a class") << R"([^\s\p{L}\p{N}]+)"
                                    << R"([^\s\x{85}\p{L}\p{N}]+)";
    QTest::addRow("\\w") << R"(\w+)"
                         << R"([\p{L}\p{M}\p{Nd}\p{Pc}]+)";
    QTest::addRow("\\h is hex") << R"(\h)"
                                << R"([0-9a-fA-F])";
    QTest::addRow("escaped backslash") << R"(\\s)"
                                       << R"(\\s)";
    QTest::addRow("] first in class") << R"([]\s])"
                                      << R"([]\s\x{85}])";
    QTest::addRow("others untouched") << R"((?i:'s|'t)|\p{N}{1,3}|\d)"
                                      << R"((?i:'s|'t)|\p{N}{1,3}|\d)";
}

void TestTokenizer::regexRewrite()
{
    QFETCH(QString, pattern);
    QFETCH(QString, pcre2);
    QCOMPARE(QString::fromStdString(detail::Regex::toPcre2Syntax(pattern.toStdString())), pcre2);
}

void TestTokenizer::regexMatches_data()
{
    QTest::addColumn<QString>("pattern");
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("matches");
    QTest::addRow("NEL is whitespace (Oniguruma)") << R"(\s+)" << QString::fromUtf8("a\xC2\x85 b")
                                                   << QStringList{QString::fromUtf8("\xC2\x85 ")};
    QTest::addRow("lookahead leaves the last space") << R"(\s+(?!\S)|\s+)"
                                                     << "a   b" << QStringList{"  ", " "};
    QTest::addRow("letters across scripts")
        << R"(\p{L}+)" << QString::fromUtf8("ab日本 Ж")
        << QStringList{QString::fromUtf8("ab日本"), QString::fromUtf8("Ж")};
    QTest::addRow("case-insensitive contraction") << R"((?i:'s))"
                                                  << "it'S" << QStringList{"'S"};
    QTest::addRow("empty matches step on") << R"(x*)"
                                           << "axb" << QStringList{"", "x", ""};
}

void TestTokenizer::regexMatches()
{
    QFETCH(QString, pattern);
    QFETCH(QString, text);
    QFETCH(QStringList, matches);
    std::string error;
    const auto regex = detail::Regex::compile(pattern.toStdString(), error);
    QVERIFY2(regex, error.c_str());
    const std::string subject = text.toStdString();
    detail::MatchList found;
    regex->findAll(subject, found);
    QStringList got;
    for (const auto& [begin, end] : found)
        got << QString::fromStdString(subject.substr(begin, end - begin));
    QCOMPARE(got, matches);
}

void TestTokenizer::vocabularyLookups()
{
    const Tokenizer tok = tinyTokenizer();
    QCOMPARE(tok.vocabSize(), std::size_t(11));
    QCOMPARE(tok.tokenToId("▁ab"), std::optional<TokenId>(10));
    QCOMPARE(tok.idToToken(10), std::optional<std::string>("▁ab"));
    QCOMPARE(tok.tokenToId("nope"), std::optional<TokenId>());
    QCOMPARE(tok.idToToken(11), std::optional<std::string>());
    QCOMPARE(tok.idToToken(-1), std::optional<std::string>());
    // Unknown ids are skipped in decoding, as HF does.
    const std::vector<TokenId> ids{8, 99, -5, 7};
    QCOMPARE(tok.decode(ids), std::string("ab"));
    QVERIFY(tok.summary().find("byte fallback") != std::string::npos);
}

void TestTokenizer::concurrentEncode()
{
    const Tokenizer tok = tinyTokenizer();
    std::vector<std::string> texts;
    for (int i = 0; i < 200; ++i)
        texts.push_back(
            std::string(static_cast<std::size_t>(i % 13), 'a') + " ab é x" + std::to_string(i));
    std::vector<std::vector<TokenId>> expected;
    for (const auto& text : texts)
        expected.push_back(Tokenizer(tok).encode(text));
    const Tokenizer fresh = tinyTokenizer(); // empty cache: threads fill it together
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 5; ++round) {
                for (std::size_t i = 0; i < texts.size(); ++i)
                    mismatches[static_cast<std::size_t>(t)] +=
                        fresh.encode(texts[i]) != expected[i];
            }
        });
    }
    for (auto& thread : threads)
        thread.join();
    QCOMPARE(mismatches, std::vector<int>(4, 0));
}

void TestTokenizer::datasetCounts_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("content");
    QTest::addColumn<int>("records");
    QTest::addColumn<int>("tokens");
    // "ab a" is 2 tokens, "a" 1, "b" 2 (▁ b); BOS adds one per record.
    QTest::addRow("text lines") << "data.txt"
                                << "ab a\n\r\na\r\n\nb\n"
                                << 3 << 5;
    QTest::addRow("jsonl alpaca")
        << "data.jsonl"
        << "{\"instruction\": \"a\", \"input\": \"\", \"output\": \"ab a\"}\n\n"
           "{\"text\": \"b\", \"id\": 7}\n"
        << 2 << 5;
    QTest::addRow("json messages")
        << "data.json"
        << R"([{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}])"
        << 1 << 3;
    QTest::addRow("json self-instruct")
        << "seed.json"
        << R"([{"instruction": "a", "instances": [{"input": "b", "output": "a"}]}])" << 1 << 4;
}

void TestTokenizer::datasetCounts()
{
    QFETCH(QString, name);
    QFETCH(QString, content);
    QFETCH(int, records);
    QFETCH(int, tokens);
    QTemporaryDir dir;
    writeFile(dir.filePath(name), content.toStdString());
    const auto count =
        tb::tokenizer::countDatasetTokens(tinyTokenizer(), dir.filePath(name).toStdString());
    QVERIFY2(count.ok(), count.ok() ? "" : count.error().toString().c_str());
    QCOMPARE(count->records, static_cast<std::uint64_t>(records));
    QCOMPARE(count->tokens, static_cast<std::uint64_t>(tokens));
    QCOMPARE(count->tokensWithSpecial, static_cast<std::uint64_t>(tokens + records));
}

void TestTokenizer::datasetErrors_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("expected");
    QTest::addRow("invalid UTF-8 line")
        << "bad.txt" << QByteArray("ok\nbad \xFF here\n") << "bad.txt:2: not valid UTF-8 (byte 5";
    QTest::addRow("jsonl not JSON")
        << "bad.jsonl" << QByteArray("{\"text\": \"a\"}\n{oops\n") << "bad.jsonl:2: not valid JSON";
    QTest::addRow("jsonl no text field") << "bad.jsonl" << QByteArray("{\"label\": 3}\n")
                                         << "bad.jsonl:1: no text field; expected one of text";
    QTest::addRow("json field type")
        << "bad.json" << QByteArray(R"([{"text": "a"}, {"output": 5}])")
        << "bad.json: [1], field 'output': got 5, expected a string";
    QTest::addRow("json not a list")
        << "bad.json" << QByteArray(R"({"text": "a"})") << "expected a JSON array of records";
    QTest::addRow("json message not object")
        << "bad.json" << QByteArray(R"([{"messages": ["hi"]}])")
        << "bad.json: [0], field 'messages[0]': got \"hi\", expected an object";
    QTest::addRow("missing file") << "" << QByteArray() << "cannot open the dataset file";
    // Review M1: refused while parsing, before a refusal quotes the record.
    QTest::addRow("jsonl line 200,000 deep")
        << "deep.jsonl"
        << QByteArray::fromStdString("{\"text\": \"a\"}\n" + tb::test::deepJsonArray() + "\n")
        << "deep.jsonl:2: not valid JSON: nested deeper than 64 levels";
    QTest::addRow("json 200,000 deep")
        << "deep.json" << QByteArray::fromStdString(tb::test::deepJsonObject())
        << "deep.json: not valid JSON: nested deeper than 64 levels";
}

void TestTokenizer::datasetErrors()
{
    QFETCH(QString, name);
    QFETCH(QByteArray, content);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString path = dir.filePath(name.isEmpty() ? QStringLiteral("absent.txt") : name);
    if (!name.isEmpty())
        writeFile(path, content.toStdString());
    const auto count = tb::tokenizer::countDatasetTokens(tinyTokenizer(), path.toStdString());
    QVERIFY(!count.ok());
    const QString message = QString::fromStdString(count.error().message);
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY2(message.startsWith(path), qPrintable(message));
}

QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
