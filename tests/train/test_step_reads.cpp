// LibTorch before Qt (LIBTORCH.md: Qt's keywords break its headers).
#include "data/batch.h"
#include "train/activation_checkpoint.h"
#include "train/host_read.h"
#include "train/model_loader.h"
#include "train/train_step.h"
#include "train/training_session.h"
#include "train_test_util.h"

#include <QTest>

// How often one optimizer step reads a figure back from its tensors (on a
// GPU each read waits for the device: host_read.h). Every read the trainer
// makes goes through readToHost, so the count here is what a GPU step
// synchronises for, beyond the collectives' own waits.
using namespace tb;
using namespace tb::train;

namespace {

LlamaConfig denseConfig()
{
    LlamaConfig config = testutil::tinyTiedConfig();
    config.vocabSize = 64;
    config.hiddenSize = 32;
    config.intermediateSize = 48;
    config.headDim = 8;
    return config;
}

// Mixtral's routing on the same shape: four experts, two a token.
LlamaConfig expertsConfig(bool balancingLoss)
{
    LlamaConfig config = denseConfig();
    config.modelType = "mixtral";
    config.tieWordEmbeddings = false;
    config.experts = 4;
    config.expertsPerToken = 2;
    config.expertIntermediateSize = config.intermediateSize;
    config.normTopkProb = true;
    config.outputRouterLogits = balancingLoss;
    return config;
}

// Micro-batches of two rows of 12 tokens, padded differently.
std::vector<data::Batch> stepBatches(std::int64_t vocab, int count)
{
    std::vector<data::TokenizedExample> rows;
    for (int i = 0; i < 2 * count; ++i) {
        data::TokenizedExample row;
        for (int t = 0; t < 12 - i % 3; ++t)
            row.inputIds.push_back(static_cast<std::int32_t>((7 * i + 5 * t) % vocab));
        row.labels = row.inputIds;
        rows.push_back(row);
    }
    std::vector<data::Batch> batches;
    for (int b = 0; b < count; ++b) {
        const std::vector<std::size_t> indices = {std::size_t(2 * b), std::size_t(2 * b + 1)};
        batches.push_back(data::collate(rows, indices, {2, 0, 0}));
    }
    return batches;
}

} // namespace

class TestStepReads : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { setComputeThreads(1); }

    void oneReadAStep_data()
    {
        QTest::addColumn<int>("method");
        QTest::addColumn<bool>("experts");
        QTest::addColumn<bool>("balancingLoss");
        QTest::addColumn<bool>("checkpointing");
        QTest::addColumn<int>("microBatches");
        QTest::addColumn<int>("expected"); // reads in one trainStep
        using M = config::Method;
        QTest::addRow("full, 1 micro-batch") << int(M::Full) << false << false << false << 1 << 1;
        QTest::addRow("full, 3 micro-batches") << int(M::Full) << false << false << false << 3 << 1;
        QTest::addRow("lora, checkpointed, 2") << int(M::Lora) << false << false << true << 2 << 1;
        QTest::addRow("qlora, 2") << int(M::Qlora) << false << false << false << 2 << 1;
        // The expert loop needs each expert's row count on the host: one
        // read a layer a forward (2 layers; checkpointing routes again in
        // the recompute).
        QTest::addRow("experts, 2") << int(M::Full) << true << false << false << 2 << 1 + 2 * 2;
        QTest::addRow("experts, balancing loss, 2")
            << int(M::Full) << true << true << false << 2 << 1 + 2 * 2;
        QTest::addRow("experts, checkpointed, 2")
            << int(M::Lora) << true << true << true << 2 << 1 + 2 * 2 * 2;
    }

    void oneReadAStep()
    {
        QFETCH(int, method);
        QFETCH(bool, experts);
        QFETCH(bool, balancingLoss);
        QFETCH(bool, checkpointing);
        QFETCH(int, microBatches);
        QFETCH(int, expected);
        const LlamaConfig config = experts ? expertsConfig(balancingLoss) : denseConfig();
        TrainingSession session;
        session.config.method = static_cast<config::Method>(method);
        session.config.precision = method == int(config::Method::Qlora)
            ? config::Precision::Bf16Mixed
            : config::Precision::Fp32;
        session.config.activationCheckpointing = checkpointing;
        session.config.lora.rank = 4;
        session.config.lora.dropout = 0.0;
        auto base = createCausalLm(config, ComputeDType::Float32);
        base->initializeRandom(3, 0.2);
        const auto prepared = prepareTrainableModel(session, base);
        QVERIFY2(prepared.ok(), prepared.ok() ? "" : prepared.error().toString().c_str());
        const std::vector<data::Batch> batches = stepBatches(config.vocabSize, microBatches);
        // A first step makes the optimizer's states; the second is counted.
        StepResult first =
            trainStep(*session.model, *session.parameters, *session.optimizer, batches, 1e-3, 1.0);
        QVERIFY(std::isfinite(first.loss));
        const std::uint64_t before = hostReads();
        const StepResult second =
            trainStep(*session.model, *session.parameters, *session.optimizer, batches, 1e-3, 1.0);
        const auto reads = static_cast<int>(hostReads() - before);
        QVERIFY(std::isfinite(second.loss) && std::isfinite(second.gradNorm));
        QCOMPARE(std::isfinite(second.routerAuxLoss), balancingLoss);
        QCOMPARE(reads, expected);
    }
};

QTEST_GUILESS_MAIN(TestStepReads)
#include "test_step_reads.moc"
