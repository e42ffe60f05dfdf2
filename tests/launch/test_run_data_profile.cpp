#include "launch/run_data_profile.h"

#include "data/batch.h"
#include "data/sampler.h"

#include <QtTest>

#include <algorithm>

// The planner's profile of a run's own rows (docs/PLANNER.md 4.13), held
// against a replay of the trainer's sampler written out here: each rank's
// rows for the epoch, cut into micro-batches, each padded to its longest row.
using namespace tb;

namespace {

std::vector<data::TokenizedExample> rowsOfLengths(const QList<int>& lengths)
{
    std::vector<data::TokenizedExample> rows;
    for (const int length : lengths) {
        data::TokenizedExample row;
        row.inputIds.assign(size_t(length), 7);
        row.labels.assign(size_t(length), 7);
        rows.push_back(std::move(row));
    }
    return rows;
}

config::RunConfig runWith(int microBatch, std::uint64_t seed)
{
    config::RunConfig config;
    config.training.microBatch = microBatch;
    config.training.seed = seed;
    return config;
}

} // namespace

class TestRunDataProfile : public QObject {
    Q_OBJECT
private slots:
    void replaysTheTrainersBatches_data()
    {
        QTest::addColumn<QList<int>>("lengths");
        QTest::addColumn<int>("microBatch");
        QTest::addColumn<int>("world");
        QTest::addRow("one row a batch: no padding") << QList<int>{3, 10, 5, 7} << 1 << 1;
        QTest::addRow("one batch: all padded to the longest") << QList<int>{3, 10, 5, 7} << 4 << 1;
        QTest::addRow("pairs") << QList<int>{3, 10, 5, 7, 2, 9, 4} << 2 << 1;
        QTest::addRow("two ranks, the sampler repeats a row")
            << QList<int>{3, 10, 5, 7, 2, 9, 4} << 2 << 2;
        QTest::addRow("three ranks, short last batches")
            << QList<int>{12, 1, 8, 8, 30, 2, 2, 5, 6, 11} << 3 << 3;
    }
    void replaysTheTrainersBatches()
    {
        QFETCH(QList<int>, lengths);
        QFETCH(int, microBatch);
        QFETCH(int, world);
        const std::vector<data::TokenizedExample> rows = rowsOfLengths(lengths);
        const config::RunConfig config = runWith(microBatch, 1234);
        const plan::DataProfile profile = launch::profileRows(rows, config, world, "rows.jsonl");

        std::int64_t carried = 0, tokens = 0, padded = 0, batches = 0;
        int longest = 0;
        for (int rank = 0; rank < world; ++rank) {
            const data::DistributedSampler sampler(
                data::trainingSampler(rows.size(), world, rank, config.training.seed));
            const std::vector<std::size_t> order = sampler.indices(0);
            for (size_t start = 0; start < order.size(); start += size_t(microBatch)) {
                const size_t end = std::min(order.size(), start + size_t(microBatch));
                int rowMax = 0;
                for (size_t i = start; i < end; ++i) {
                    rowMax = std::max(rowMax, lengths[qsizetype(order[i])]);
                    tokens += lengths[qsizetype(order[i])];
                }
                carried += std::int64_t(end - start);
                padded += std::int64_t(end - start) * rowMax;
                longest = std::max(longest, rowMax);
                ++batches;
            }
        }
        QCOMPARE(profile.rows, carried);
        QCOMPARE(profile.tokens, tokens);
        QCOMPARE(profile.batchTokens, padded);
        QCOMPARE(profile.microBatches, batches);
        QCOMPARE(profile.longestRow, longest);
        QCOMPARE(profile.longestRow, *std::max_element(lengths.begin(), lengths.end()));
        QCOMPARE(profile.source, std::string("rows.jsonl"));
        if (microBatch == 1)
            QCOMPARE(profile.batchTokens, profile.tokens);
        if (world == 1)
            QCOMPARE(profile.rows, std::int64_t(lengths.size()));
    }

    // DPO's rows come in pairs (chosen, then rejected: 2 rows a sample, as
    // data::prepareData lays them out): micro_batch counts pairs, so a
    // micro-batch carries 2 x micro_batch rows, and the completion tokens
    // of the largest one are counted for the logits DPO makes.
    void countsPreferencePairs()
    {
        // Four pairs of rows of 6 tokens; the first 2 of each are prompt.
        std::vector<data::TokenizedExample> rows = rowsOfLengths({6, 6, 6, 6, 6, 6, 6, 6});
        for (data::TokenizedExample& row : rows)
            row.labels[0] = row.labels[1] = data::kIgnoreIndex;
        config::RunConfig config = runWith(2, 7);
        config.objective = config::Objective::Dpo;
        const plan::DataProfile profile = launch::profileRows(rows, config, 1, "pairs.jsonl");
        QCOMPARE(profile.rows, std::int64_t(8));
        QCOMPARE(profile.microBatches, std::int64_t(2)); // 4 pairs, 2 a micro-batch
        QCOMPARE(profile.batchTokens, std::int64_t(8 * 6));
        QCOMPARE(profile.peakLossTokens, std::int64_t(4 * 4)); // 4 rows x 4 completion tokens
    }

    // The run's epochs, or its max_steps in epochs of this profile.
    void passesComeFromTheRun()
    {
        const std::vector<data::TokenizedExample> rows = rowsOfLengths({4, 4, 4, 4, 4, 4, 4, 4});
        config::RunConfig config = runWith(2, 1);
        config.training.epochs = 3;
        plan::PlanInput in;
        in.gpusPerNode = 1;
        launch::applyDataProfile(in, config, launch::profileRows(rows, config, 1, "a"));
        QCOMPARE(in.epochs, 3.0);
        QCOMPARE(in.data.microBatches, std::int64_t(4));

        config.training.maxSteps = 6;
        config.training.gradAccum = 2;
        launch::applyDataProfile(in, config, launch::profileRows(rows, config, 1, "a"));
        QCOMPARE(in.epochs, 3.0); // 6 steps x 2 micro-batches / 4 a epoch
    }
};

QTEST_GUILESS_MAIN(TestRunDataProfile)
#include "test_run_data_profile.moc"
