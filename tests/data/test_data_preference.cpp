#include "../support/test_data.h"
#include "data/batch.h"
#include "data/dataset_reader.h"
#include "data/preference_pairs.h"

#include <QTest>

#include <algorithm>

using namespace tb::data;

// Preference pairs (TRL's plain form): what the reader refuses, named by
// file, line and field; each pair's two rows as TRL's DPOTrainer tokenizes
// them; the truncation rule; and batches that keep a pair's rows together,
// chosen rows first.
namespace {

ReaderOptions pairOptions(tb::config::MalformedPolicy policy)
{
    ReaderOptions options;
    options.format = tb::config::DataFormat::Preference;
    options.malformed = policy;
    return options;
}

const tb::tokenizer::Tokenizer& demoTokenizer()
{
    static const tb::tokenizer::Tokenizer tokenizer =
        tb::tokenizer::Tokenizer::load(tb::test::demoModelDir()).value();
    return tokenizer;
}

Record pair(std::string prompt, std::string chosen, std::string rejected)
{
    Record record;
    record.kind = RecordKind::Preference;
    record.prompt = std::move(prompt);
    record.chosen = std::move(chosen);
    record.rejected = std::move(rejected);
    return record;
}

std::size_t labelled(const TokenizedExample& row)
{
    return row.trainableTokens();
}

} // namespace

class TestDataPreference : public QObject {
    Q_OBJECT

private slots:
    void readsPairs()
    {
        ReadReport report;
        const auto records = parseRecords(
            "{\"prompt\": \"Q\", \"chosen\": \" yes\", \"rejected\": \" no\"}\n\n"
            "{\"prompt\": \"\", \"chosen\": \"a\", \"rejected\": \"b\", \"extra\": 1}\n",
            "pairs.jsonl", pairOptions(tb::config::MalformedPolicy::Fail), report);
        QVERIFY2(records.ok(), records.ok() ? "" : records.error().toString().c_str());
        QCOMPARE(records.value().size(), size_t(2));
        const Record& first = records.value()[0];
        QVERIFY(first.kind == RecordKind::Preference);
        QCOMPARE(first.prompt, std::string("Q"));
        QCOMPARE(first.chosen, std::string(" yes"));
        QCOMPARE(first.rejected, std::string(" no"));
        QCOMPARE(records.value()[1].source.line, size_t(3));
    }

    void refusesBadPairs_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("message");
        QTest::addRow("missing prompt") << R"({"chosen": "a", "rejected": "b"})"
                                        << "'prompt' is missing";
        QTest::addRow("missing rejected") << R"({"prompt": "p", "chosen": "a"})"
                                          << "'rejected' is missing";
        QTest::addRow("number as chosen") << R"({"prompt": "p", "chosen": 3, "rejected": "b"})"
                                          << "'chosen' is number, expected a string";
        QTest::addRow("null rejected") << R"({"prompt": "p", "chosen": "a", "rejected": null})"
                                       << "'rejected' is missing";
        QTest::addRow("empty chosen") << R"({"prompt": "p", "chosen": " ", "rejected": "b"})"
                                      << "'chosen' is empty";
        QTest::addRow("empty rejected") << R"({"prompt": "p", "chosen": "a", "rejected": ""})"
                                        << "'rejected' is empty";
        QTest::addRow("same completions") << R"({"prompt": "p", "chosen": "a", "rejected": "a"})"
                                          << "'chosen' equals 'rejected'";
        QTest::addRow("a conversational prompt, plain completions")
            << R"({"prompt": [{"role": "user", "content": "p"}], "chosen": "a", "rejected": "b"})"
            << "'prompt' is a list of messages, but 'chosen' is a string";
        QTest::addRow("a plain prompt, conversational completions")
            << R"({"prompt": "p", "chosen": [{"role": "assistant", "content": "a"}], "rejected": [{"role": "assistant", "content": "b"}]})"
            << "'prompt' is string, but 'chosen' is a list of messages";
        QTest::addRow("conversational, no shared turn")
            << R"({"chosen": [{"role": "user", "content": "p"}, {"role": "assistant", "content": "a"}], "rejected": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "b"}]})"
            << "share no turn and there is no 'prompt'";
        QTest::addRow("conversational, the same completions")
            << R"({"prompt": [{"role": "user", "content": "p"}], "chosen": [{"role": "assistant", "content": "a"}], "rejected": [{"role": "assistant", "content": "a"}]})"
            << "'chosen' equals 'rejected'";
        QTest::addRow("conversational, a bad role")
            << R"({"prompt": [{"role": "user", "content": "p"}], "chosen": [{"role": "bot", "content": "a"}], "rejected": [{"role": "assistant", "content": "b"}]})"
            << "chosen[0]: role 'bot', expected system, user, assistant or tool";
        QTest::addRow("not an object") << R"(["p", "a", "b"])"
                                       << "expected a JSON object";
    }
    void refusesBadPairs()
    {
        QFETCH(QString, line);
        QFETCH(QString, message);
        // The bad record on line 2, after a good one.
        const std::string text = "{\"prompt\": \"p\", \"chosen\": \"a\", \"rejected\": \"b\"}\n"
            + line.toStdString() + "\n";
        ReadReport failing;
        const auto failed = parseRecords(
            text, "pairs.jsonl", pairOptions(tb::config::MalformedPolicy::Fail), failing);
        QVERIFY(!failed.ok());
        const QString error = QString::fromStdString(failed.error().toString());
        QVERIFY2(error.contains("pairs.jsonl:2"), qPrintable(error));
        QVERIFY2(error.contains(message), qPrintable(error));
        // Skipped, it is counted and the good pair stays.
        ReadReport skipping;
        const auto kept = parseRecords(
            text, "pairs.jsonl", pairOptions(tb::config::MalformedPolicy::Skip), skipping);
        QVERIFY(kept.ok());
        QCOMPARE(kept.value().size(), size_t(1));
        QCOMPARE(skipping.malformedCount(), size_t(1));
        QCOMPARE(skipping.issues().front().where.line, size_t(2));
    }

    // TRL's conversational form: the prompt the turns share when there is
    // none, and no tokenization without the model's chat template.
    void readsConversationalPairs()
    {
        const std::string text =
            R"({"chosen": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}], "rejected": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Go away."}]})";
        ReadReport report;
        const auto records = parseRecords(
            text, "pairs.jsonl", pairOptions(tb::config::MalformedPolicy::Fail), report);
        QVERIFY2(records.ok(), records.ok() ? "" : records.error().toString().c_str());
        const Record& record = records.value().front();
        QVERIFY(record.conversational());
        QCOMPARE(record.promptMessages.size(), size_t(2));
        QCOMPARE(record.promptMessages.back().content, std::string("Hi"));
        QCOMPARE(record.chosenMessages, (std::vector<ChatMessage>{{"assistant", "Hello!"}}));
        QCOMPARE(record.rejectedMessages, (std::vector<ChatMessage>{{"assistant", "Go away."}}));
        const auto tokenized = tokenizePreferencePair(record, demoTokenizer());
        QVERIFY(!tokenized.ok());
        QVERIFY(QString::fromStdString(tokenized.error().message)
                    .contains("needs the model's chat template"));
    }

    // TRL: the EOS text appended to each completion, prompt and prompt +
    // completion encoded with special tokens, the prompt their common prefix.
    void tokenizesAsTrl()
    {
        const auto& tokenizer = demoTokenizer();
        const Record record = pair("Once upon a time", " there was a cat.", " the end");
        const auto tokenized = tokenizePreferencePair(record, tokenizer);
        QVERIFY2(tokenized.ok(), tokenized.ok() ? "" : tokenized.error().toString().c_str());
        const PreferencePair& rows = tokenized.value();
        const auto prompt = tokenizer.encode(record.prompt, true);
        QCOMPARE(rows.promptTokens, prompt.size());
        QCOMPARE(
            rows.chosen.inputIds, tokenizer.encode("Once upon a time there was a cat.</s>", true));
        QCOMPARE(rows.rejected.inputIds, tokenizer.encode("Once upon a time the end</s>", true));
        QCOMPARE(rows.chosen.inputIds.front(), *tokenizer.bosId());
        QCOMPARE(rows.chosen.inputIds.back(), *tokenizer.eosId());
        for (const TokenizedExample* row : {&rows.chosen, &rows.rejected}) {
            QVERIFY(std::equal(prompt.begin(), prompt.end(), row->inputIds.begin()));
            for (std::size_t i = 0; i < row->size(); ++i)
                QCOMPARE(row->labels[i], i < rows.promptTokens ? kIgnoreIndex : row->inputIds[i]);
        }
        // A completion that already ends with the EOS text gets no second one.
        const auto ended = tokenizePreferencePair(pair("Hi", " yes</s>", " no"), tokenizer);
        QVERIFY(ended.ok());
        QCOMPARE(ended.value().chosen.inputIds, tokenizer.encode("Hi yes</s>", true));
    }

    // Each row keeps its first sequence_length tokens (TRL's keep_start); a
    // pair whose prompt fills the length is dropped, since neither row would
    // keep a completion token.
    void truncatesBothRowsTheSameWay()
    {
        const auto& tokenizer = demoTokenizer();
        const Record record = pair("Once upon a time", " there was a big cat in the house.", " no");
        const PreferencePair rows = tokenizePreferencePair(record, tokenizer).value();
        const std::size_t length = rows.promptTokens + 2;
        QVERIFY(rows.chosen.size() > length);
        RowStats stats;
        const auto cut = preferenceRows({rows}, length, &stats);
        QCOMPARE(cut.size(), size_t(2));
        QCOMPARE(cut[0].size(), length);
        QVERIFY(std::equal(
            cut[0].inputIds.begin(), cut[0].inputIds.end(), rows.chosen.inputIds.begin()));
        QCOMPARE(cut[1].inputIds,
            rows.rejected.size() > length ? std::vector<std::int32_t>(
                rows.rejected.inputIds.begin(), rows.rejected.inputIds.begin() + length)
                                          : rows.rejected.inputIds);
        QCOMPARE(labelled(cut[0]), size_t(2));
        QCOMPARE(stats.truncatedExamples, rows.rejected.size() > length ? size_t(2) : size_t(1));

        RowStats dropped;
        QVERIFY(preferenceRows({rows}, rows.promptTokens, &dropped).empty());
        QCOMPARE(dropped.droppedExamples, size_t(2));
    }

    // micro_batch counts pairs: a batch of two pairs holds both chosen rows,
    // then both rejected rows, in the same pair order.
    void batchesKeepPairsTogether()
    {
        std::vector<TokenizedExample> rows;
        for (std::int32_t pairIndex = 0; pairIndex < 5; ++pairIndex) {
            for (std::int32_t part = 0; part < 2; ++part) {
                TokenizedExample row;
                row.inputIds = {10 * pairIndex + part, 7};
                row.labels = {kIgnoreIndex, 7};
                rows.push_back(row);
            }
        }
        SamplerOptions sampler;
        sampler.seed = 3;
        BatchOptions options{2, 0, 0};
        options.rowsPerSample = 2;
        BatchIterator batches(rows, sampler, options);
        QCOMPARE(batches.batchesPerEpoch(), size_t(3));
        std::vector<std::int32_t> seenPairs;
        for (int i = 0; i < 3; ++i) {
            const Batch batch = batches.next();
            QCOMPARE(batch.rowsPerSample, size_t(2));
            const std::size_t pairs = batch.batchSize / 2;
            QCOMPARE(batch.batchSize % 2, size_t(0));
            for (std::size_t p = 0; p < pairs; ++p) {
                const std::int32_t chosen = batch.inputIds[p * batch.sequenceLength];
                const std::int32_t rejected = batch.inputIds[(pairs + p) * batch.sequenceLength];
                QCOMPARE(chosen % 10, 0);
                QCOMPARE(rejected, chosen + 1);
                seenPairs.push_back(chosen / 10);
            }
        }
        std::sort(seenPairs.begin(), seenPairs.end());
        QCOMPARE(seenPairs, (std::vector<std::int32_t>{0, 1, 2, 3, 4}));
    }
};

QTEST_GUILESS_MAIN(TestDataPreference)
#include "test_data_preference.moc"
