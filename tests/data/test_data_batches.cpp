#include "../support/test_data.h"
#include "data/batch.h"
#include "data/packing.h"
#include "data/prepare_data.h"
#include "data/random.h"
#include "data/sampler.h"
#include "data/split.h"

#include "config/config_loader.h"

#include <QTest>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>

using namespace tb::data;

namespace {

std::string modelDir()
{
    return tb::test::demoModelDir();
}

// Examples of varied lengths with a prompt part (masked) and an answer part.
std::vector<TokenizedExample> syntheticExamples(size_t count, std::uint64_t seed)
{
    Xoshiro256 random(seed);
    std::vector<TokenizedExample> examples;
    std::int32_t nextId = 10;
    for (size_t i = 0; i < count; ++i) {
        TokenizedExample example;
        const size_t length = 1 + random.below(40);
        const size_t prompt = random.below(length);
        for (size_t t = 0; t < length; ++t) {
            example.inputIds.push_back(nextId++);
            example.labels.push_back(t < prompt ? kIgnoreIndex : example.inputIds.back());
        }
        examples.push_back(std::move(example));
    }
    return examples;
}

tb::config::RunConfig recipe(const char* name)
{
    auto loaded = tb::config::loadRunConfig(tb::test::sourcePath("presets/recipes/") + name);
    if (!loaded.ok())
        qFatal("%s", loaded.error().toString().c_str());
    return loaded.value();
}

} // namespace

class TestDataBatches : public QObject {
    Q_OBJECT

private slots:
    // Reference values from an independent Python implementation of
    // SplitMix64 and xoshiro256** (Vigna's reference C code transcribed).
    void generatorsMatchReference()
    {
        SplitMix64 split(0);
        QCOMPARE(split.next(), 0xe220a8397b1dcdafull);
        QCOMPARE(split.next(), 0x6e789e6aa1b965f4ull);
        Xoshiro256 random(42);
        QCOMPARE(random.next(), 0x15780b2e0c2ec716ull);
        QCOMPARE(random.next(), 0x6104d9866d113a7eull);
        QCOMPARE(random.next(), 0xae17533239e499a1ull);
        QCOMPARE(permutation(10, 7), (std::vector<size_t>{8, 3, 9, 0, 7, 2, 1, 6, 5, 4}));
    }

    void belowIsUniform()
    {
        // Fixed seed, so this cannot flake: counts of 60000 draws in 6 bins
        // stay within 3% of 10000 each.
        Xoshiro256 random(2024);
        std::array<int, 6> counts{};
        for (int i = 0; i < 60000; ++i)
            ++counts[random.below(6)];
        for (const int count : counts)
            QVERIFY2(std::abs(count - 10000) < 300, qPrintable(QString::number(count)));
        QCOMPARE(random.below(1), std::uint64_t(0));
    }

    void permutationIsSeeded()
    {
        const auto a = permutation(1000, 1);
        auto sorted = a;
        std::sort(sorted.begin(), sorted.end());
        std::vector<size_t> identity(1000);
        std::iota(identity.begin(), identity.end(), size_t{0});
        QCOMPARE(sorted, identity);
        QCOMPARE(permutation(1000, 1), a);
        QVERIFY(permutation(1000, 2) != a);
        QVERIFY(permutation(0, 1).empty());
    }

    void validationSplit_data()
    {
        QTest::addColumn<int>("count");
        QTest::addColumn<double>("fraction");
        QTest::addColumn<int>("held");
        QTest::addRow("tenth of 64") << 64 << 0.1 << 6;
        QTest::addRow("none") << 50 << 0.0 << 0;
        QTest::addRow("at least one") << 5 << 0.01 << 1;
        QTest::addRow("never all") << 3 << 0.99 << 2;
        QTest::addRow("single record") << 1 << 0.5 << 0;
        QTest::addRow("empty") << 0 << 0.5 << 0;
    }
    void validationSplit()
    {
        QFETCH(int, count);
        QFETCH(double, fraction);
        QFETCH(int, held);
        const SplitIndices split = splitForValidation(size_t(count), fraction, 99);
        QCOMPARE(int(split.validation.size()), held);
        QCOMPARE(int(split.train.size() + split.validation.size()), count);
        std::set<size_t> all(split.train.begin(), split.train.end());
        all.insert(split.validation.begin(), split.validation.end());
        QCOMPARE(int(all.size()), count);
        QVERIFY(std::is_sorted(split.validation.begin(), split.validation.end()));
        QCOMPARE(splitForValidation(size_t(count), fraction, 99).validation, split.validation);
    }

    // As torch's DistributedSampler: every sample once per epoch across the
    // ranks, padded by repeating (or cut with dropLast), the same count per
    // rank, deterministic by seed + epoch.
    void samplerCoversEachSampleOnce_data()
    {
        QTest::addColumn<int>("size");
        QTest::addColumn<int>("world");
        QTest::addColumn<bool>("dropLast");
        for (const int size : {0, 1, 2, 5, 7, 12, 13}) {
            for (int world = 1; world <= 4; ++world) {
                for (const bool dropLast : {false, true})
                    QTest::addRow("n=%d world=%d%s", size, world, dropLast ? " drop" : "")
                        << size << world << dropLast;
            }
        }
    }
    void samplerCoversEachSampleOnce()
    {
        QFETCH(int, size);
        QFETCH(int, world);
        QFETCH(bool, dropLast);
        for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
            std::map<size_t, int> seen;
            size_t perRank = 0;
            for (int rank = 0; rank < world; ++rank) {
                const DistributedSampler sampler({size_t(size), world, rank, true, 7, dropLast});
                const auto indices = sampler.indices(epoch);
                QCOMPARE(indices.size(), sampler.samplesPerRank());
                QCOMPARE(sampler.indices(epoch), indices); // deterministic
                perRank = indices.size();
                for (const size_t index : indices) {
                    QVERIFY(index < size_t(size));
                    ++seen[index];
                }
            }
            const size_t total = perRank * size_t(world);
            if (dropLast) {
                QCOMPARE(total, size_t(size / world * world));
                QCOMPARE(seen.size(), total); // no sample twice
            } else {
                QCOMPARE(total, size_t((size + world - 1) / world * world));
                QCOMPARE(int(seen.size()), size); // every sample
                int repeats = 0;
                for (const auto& [index, count] : seen)
                    repeats += count - 1;
                QCOMPARE(size_t(repeats), total - size_t(size));
            }
        }
        if (size >= 5) {
            const DistributedSampler sampler({size_t(size), world, 0, true, 7, dropLast});
            QVERIFY(sampler.indices(0) != sampler.indices(1) || sampler.samplesPerRank() < 2);
        }
    }

    void samplerWithoutShuffleKeepsOrder()
    {
        const DistributedSampler rank1({10, 3, 1, false, 0, false});
        QCOMPARE(rank1.indices(5), (std::vector<size_t>{1, 4, 7, 0}));
        const DistributedSampler rank2({10, 3, 2, false, 0, false});
        QCOMPARE(rank2.indices(0), (std::vector<size_t>{2, 5, 8, 1}));
    }

    // A run stopped at any batch and rebuilt at position() yields the same
    // batches as one that never stopped, across epoch boundaries, per rank.
    void iteratorResumes_data()
    {
        QTest::addColumn<int>("world");
        QTest::addColumn<int>("microBatch");
        QTest::addRow("one rank") << 1 << 4;
        QTest::addRow("three ranks") << 3 << 2;
        QTest::addRow("four ranks, odd batch") << 4 << 3;
    }
    void iteratorResumes()
    {
        QFETCH(int, world);
        QFETCH(int, microBatch);
        const auto rows = syntheticExamples(23, 5);
        for (int rank = 0; rank < world; ++rank) {
            const SamplerOptions sampler{0, world, rank, true, 11, false};
            const BatchOptions batch{size_t(microBatch), -1, 0};
            BatchIterator straight(rows, sampler, batch);
            std::vector<Batch> expected;
            std::vector<DataPosition> positions;
            for (int i = 0; i < 12; ++i) {
                positions.push_back(straight.position());
                expected.push_back(straight.next());
            }
            for (const int stopAt : {1, 4, 7, 11}) {
                BatchIterator resumed(rows, sampler, batch, positions[size_t(stopAt)]);
                for (int i = stopAt; i < 12; ++i) {
                    const Batch again = resumed.next();
                    QCOMPARE(again.inputIds, expected[size_t(i)].inputIds);
                    QCOMPARE(again.epoch, expected[size_t(i)].epoch);
                }
            }
            // One epoch of batches covers the rank's share once.
            BatchIterator epoch(rows, sampler, batch);
            std::vector<size_t> indices;
            for (size_t i = 0; i < epoch.batchesPerEpoch(); ++i) {
                const Batch next = epoch.next();
                QCOMPARE(next.epoch, std::uint64_t(0));
                indices.insert(indices.end(), next.sampleIndices.begin(), next.sampleIndices.end());
            }
            QCOMPARE(indices, epoch.sampler().indices(0));
            QCOMPARE(epoch.position(), (DataPosition{1, 0}));
        }
    }

    void packingKeepsEveryTokenOnce_data()
    {
        QTest::addColumn<int>("examples");
        QTest::addColumn<int>("length");
        QTest::addColumn<bool>("separator");
        QTest::addRow("short rows") << 50 << 8 << true;
        QTest::addRow("long rows") << 50 << 300 << true;
        QTest::addRow("no separator") << 30 << 16 << false;
        QTest::addRow("one token rows") << 5 << 1 << true;
        QTest::addRow("nothing") << 0 << 16 << true;
    }
    void packingKeepsEveryTokenOnce()
    {
        QFETCH(int, examples);
        QFETCH(int, length);
        QFETCH(bool, separator);
        const std::int32_t eos = 2;
        const auto input = syntheticExamples(size_t(examples), 3);
        std::vector<std::int32_t> streamIds;
        std::vector<std::int32_t> streamLabels;
        for (const TokenizedExample& example : input) {
            streamIds.insert(streamIds.end(), example.inputIds.begin(), example.inputIds.end());
            streamLabels.insert(streamLabels.end(), example.labels.begin(), example.labels.end());
            if (separator) {
                streamIds.push_back(eos);
                streamLabels.push_back(eos);
            }
        }
        RowStats stats;
        const auto rows = packExamples(input, size_t(length),
            separator ? std::optional<std::int32_t>(eos) : std::nullopt, &stats);
        std::vector<std::int32_t> packedIds;
        std::vector<std::int32_t> packedLabels;
        for (size_t i = 0; i < rows.size(); ++i) {
            QCOMPARE(rows[i].labels.size(), rows[i].inputIds.size());
            if (i + 1 < rows.size())
                QCOMPARE(rows[i].size(), size_t(length));
            QVERIFY(rows[i].size() >= 1 && rows[i].size() <= size_t(length));
            packedIds.insert(packedIds.end(), rows[i].inputIds.begin(), rows[i].inputIds.end());
            packedLabels.insert(packedLabels.end(), rows[i].labels.begin(), rows[i].labels.end());
        }
        QCOMPARE(packedIds, streamIds);
        QCOMPARE(packedLabels, streamLabels);
        QCOMPARE(stats.tokens, streamIds.size());
        QCOMPARE(stats.rows, rows.size());
    }

    void packingDoesNotDoubleAnEos()
    {
        const std::vector<TokenizedExample> input{{{5, 6, 2}, {kIgnoreIndex, 6, 2}}, {{7}, {7}}};
        const auto rows = packExamples(input, 10, 2);
        QCOMPARE(rows.size(), size_t(1));
        QCOMPARE(rows[0].inputIds, (std::vector<std::int32_t>{5, 6, 2, 7, 2}));
    }

    void truncationDropsExamplesWithoutAnswer()
    {
        std::vector<TokenizedExample> input{
            {{1, 2, 3}, {kIgnoreIndex, 2, 3}}, // kept whole
            {{1, 2, 3, 4, 5, 6}, {kIgnoreIndex, kIgnoreIndex, 3, 4, 5, 6}}, // cut, kept
            {{1, 2, 3, 4, 5},
                {kIgnoreIndex, kIgnoreIndex, kIgnoreIndex, kIgnoreIndex, 5}}, // answer cut away
            {{1, 9}, {1, kIgnoreIndex}}, // only position 0 trained: no loss term
        };
        RowStats stats;
        const auto rows = truncateExamples(input, 4, &stats);
        QCOMPARE(rows.size(), size_t(2));
        QCOMPARE(rows[1].inputIds, (std::vector<std::int32_t>{1, 2, 3, 4}));
        QCOMPARE(stats.truncatedExamples, size_t(2));
        QCOMPARE(stats.droppedExamples, size_t(2));
        QCOMPARE(stats.tokens, size_t(7));
    }

    void collatePadsOnTheRight()
    {
        const std::vector<TokenizedExample> rows{{{5, 6, 7}, {kIgnoreIndex, 6, 7}}, {{8}, {8}}};
        const std::vector<size_t> order{1, 0};
        Batch batch = collate(rows, order, BatchOptions{2, 0, 0});
        QCOMPARE(batch.batchSize, size_t(2));
        QCOMPARE(batch.sequenceLength, size_t(3));
        QCOMPARE(batch.inputIds, (std::vector<std::int32_t>{8, 0, 0, 5, 6, 7}));
        QCOMPARE(batch.labels,
            (std::vector<std::int32_t>{8, kIgnoreIndex, kIgnoreIndex, kIgnoreIndex, 6, 7}));
        QCOMPARE(batch.attentionMask, (std::vector<std::int32_t>{1, 0, 0, 1, 1, 1}));
        QCOMPARE(batch.tokens(), size_t(4));
        QCOMPARE(batch.lossTokens(), size_t(2));
        batch = collate(rows, order, BatchOptions{2, 0, 5});
        QCOMPARE(batch.sequenceLength, size_t(5));
        QCOMPARE(batch.inputIds.size(), size_t(10));
    }

    // The whole pipeline on the LoRA recipe with the real tokenizer.
    void prepareRecipe()
    {
        const auto tokenizer = tb::tokenizer::Tokenizer::load(modelDir());
        QVERIFY(tokenizer.ok());
        const tb::config::RunConfig config = recipe("lora.yaml");
        const auto prepared = prepareData(config, tokenizer.value());
        QVERIFY2(prepared.ok(), prepared.ok() ? "" : prepared.error().toString().c_str());
        const PreparedData& data = prepared.value();
        QCOMPARE(data.stats.trainRecords, size_t(58));
        QCOMPARE(data.stats.validationRecords, size_t(6));
        QCOMPARE(data.train.size(), size_t(58));
        QCOMPARE(data.validation.size(), size_t(6));
        QVERIFY(data.stats.promptTemplate == tb::config::PromptTemplate::Alpaca);
        QVERIFY(data.stats.warnings.empty());
        for (const TokenizedExample& row : data.train) {
            QCOMPARE(row.inputIds.front(), *tokenizer.value().bosId());
            QCOMPARE(row.inputIds.back(), *tokenizer.value().eosId());
            QCOMPARE(row.labels.front(), kIgnoreIndex);
            QCOMPARE(row.labels.back(), *tokenizer.value().eosId());
        }
        const auto again = prepareData(config, tokenizer.value());
        QVERIFY(again.ok());
        QVERIFY(again.value().train == data.train);
        QVERIFY(again.value().validation == data.validation);

        tb::config::RunConfig packed = config;
        packed.data.packing = true;
        packed.data.sequenceLength = 64;
        const auto packedData = prepareData(packed, tokenizer.value());
        QVERIFY(packedData.ok());
        QCOMPARE(packedData.value().stats.train.tokens, data.stats.train.tokens);
        QVERIFY(std::all_of(packedData.value().train.begin(), packedData.value().train.end() - 1,
            [](const TokenizedExample& row) { return row.size() == 64; }));
    }

    void prepareReportsProgressAndCancels()
    {
        const auto tokenizer = tb::tokenizer::Tokenizer::load(modelDir());
        QVERIFY(tokenizer.ok());
        const tb::config::RunConfig config = recipe("full.yaml");
        QStringList stages;
        PrepareCallbacks callbacks;
        callbacks.progress = [&](std::string_view stage, size_t done, size_t total) {
            stages << QString::fromUtf8(stage.data(), int(stage.size()));
            return !(stage == "tokenize train" && done == total);
        };
        const auto prepared = prepareData(config, tokenizer.value(), callbacks);
        QVERIFY(!prepared.ok());
        QVERIFY(QString::fromStdString(prepared.error().message).contains("cancelled"));
        QCOMPARE(stages, (QStringList{"read", "tokenize train"}));
    }

    void prepareChatNeedsATemplate()
    {
        const auto tokenizer = tb::tokenizer::Tokenizer::load(modelDir());
        QVERIFY(tokenizer.ok());
        tb::config::RunConfig config = recipe("lora.yaml");
        config.data.trainFiles = {tb::test::sourcePath("resources/demo/tiny_chat.jsonl")};
        config.data.format = tb::config::DataFormat::Chat;
        auto prepared = prepareData(config, tokenizer.value());
        QVERIFY(!prepared.ok());
        QVERIFY(!prepared.error().hint.empty());
        config.data.promptTemplate = tb::config::PromptTemplate::ChatMl;
        prepared = prepareData(config, tokenizer.value());
        QVERIFY(prepared.ok());
        // stories260K has no <|im_start|>: the markers are spelled out, with a warning each.
        QCOMPARE(prepared.value().stats.warnings.size(), size_t(2));
    }

    void prepareAlpacaRecordsMasksResponses()
    {
        const std::string file = tb::test::testDatasetsPath("synthetic/instructions.json");
        const auto tokenizer = tb::tokenizer::Tokenizer::load(modelDir());
        QVERIFY(tokenizer.ok());
        tb::config::RunConfig config = recipe("lora.yaml");
        config.data.trainFiles = {file};
        config.data.validationSplit = 0.0;
        config.data.sequenceLength = 512;
        const auto prepared = prepareData(config, tokenizer.value());
        QVERIFY(prepared.ok());
        const DataStats& stats = prepared.value().stats;
        QCOMPARE(stats.trainRecords, size_t(40));
        QCOMPARE(stats.train.examples, size_t(40));
        QCOMPARE(stats.train.rows + stats.train.droppedExamples, size_t(40));
        // Every row: masked prompt first, then only trained tokens.
        for (const TokenizedExample& row : prepared.value().train) {
            const auto firstTrained = std::find_if(row.labels.begin(), row.labels.end(),
                [](int label) { return label != kIgnoreIndex; });
            QVERIFY(firstTrained != row.labels.end());
            QVERIFY(std::none_of(
                firstTrained, row.labels.end(), [](int label) { return label == kIgnoreIndex; }));
        }
        qInfo("synthetic instructions with stories260K: %zu rows, %zu tokens, %zu trained, "
              "%zu cut, %zu dropped",
            stats.train.rows, stats.train.tokens, stats.train.trainableTokens,
            stats.train.truncatedExamples, stats.train.droppedExamples);
    }
};

QTEST_GUILESS_MAIN(TestDataBatches)
#include "test_data_batches.moc"
