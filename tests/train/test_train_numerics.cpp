#include "data/batch.h"
#include "train/activation_checkpoint.h"
#include "train/adamw.h"
#include "train/chunked_loss.h"
#include "train/flat_parameters.h"
#include "train/lora.h"
#include "train/lr_schedule.h"
#include "train/model_loader.h"
#include "train/tensor_storage.h"
#include "train/train_step.h"
#include "train_test_util.h"

#include <ATen/CPUGeneratorImpl.h>

#include <QTest>

#include <cmath>

// The numbers of one training step: chunked loss and gradients against a
// float64 reference, AdamW against its formula, schedules, accumulation,
// activation checkpointing and mixed precision against plain fp32.
using namespace tb;
using namespace tb::train;

namespace {

// Two rows of unequal length: a prompt masked from the loss, then a response.
std::vector<data::TokenizedExample> sampleRows(std::int64_t vocab)
{
    auto row = [&](std::vector<std::int32_t> ids, std::size_t promptLength) {
        data::TokenizedExample example;
        for (auto& id : ids)
            id = static_cast<std::int32_t>(id % vocab);
        example.inputIds = ids;
        example.labels = ids;
        for (std::size_t i = 0; i < promptLength; ++i)
            example.labels[i] = data::kIgnoreIndex;
        return example;
    };
    return {row({1, 5, 9, 13, 2, 7, 11, 3, 17, 4}, 3), row({1, 8, 6, 21, 14, 3, 25}, 2)};
}

data::Batch batchOf(
    const std::vector<data::TokenizedExample>& rows, std::vector<std::size_t> indices)
{
    return data::collate(rows, indices, {indices.size(), 0, 0});
}

std::shared_ptr<LlamaForCausalLm> randomModel(
    const LlamaConfig& config, ComputeDType dtype, std::uint64_t seed = 7)
{
    auto model = createCausalLm(config, dtype);
    model->initializeRandom(seed, 0.2);
    return model;
}

// One field of every unit, real elements only, in unit order.
torch::Tensor concatenated(FlatParameters& flat, torch::Tensor FlatParameters::Unit::*field)
{
    std::vector<torch::Tensor> parts;
    for (FlatParameters::Unit& unit : flat.units()) {
        const torch::Tensor& whole = unit.*field;
        parts.push_back(whole.narrow(0, 0, std::min(unit.numel, whole.numel())));
    }
    return torch::cat(parts);
}

torch::Tensor masterGradientsOf(FlatParameters& flat)
{
    return concatenated(flat, &FlatParameters::Unit::masterGradients);
}

std::vector<TrainableParameter> allParameters(LlamaForCausalLm& model)
{
    std::vector<TrainableParameter> out;
    for (auto& item : model.named_parameters()) {
        if (item.value().requires_grad())
            out.push_back({item.key(), item.value(), item.value().dim() >= 2});
    }
    return out;
}

// The reference: float64 logits of the whole batch, shifted, cross-entropy
// with ignore_index -100 averaged over the labelled tokens, autograd.
double referenceLossAndGradients(LlamaForCausalLm& model, const data::Batch& batch)
{
    const auto [ids, labels] = batchTensors(batch, torch::kCPU);
    const torch::Tensor logits = model.forward(ids);
    const auto t = logits.size(1);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits.narrow(1, 0, t - 1).reshape({-1, logits.size(2)}),
        labels.narrow(1, 1, t - 1).reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
    loss.backward();
    return loss.item<double>();
}

} // namespace

class TestTrainNumerics : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { setComputeThreads(1); }

    void stepMatchesFloat64Reference_data()
    {
        QTest::addColumn<bool>("tied");
        QTest::addColumn<qint64>("chunkRows");
        QTest::addRow("untied, one chunk") << false << qint64(0);
        QTest::addRow("untied, chunks of 3 rows") << false << qint64(3);
        QTest::addRow("tied, chunks of 1 row") << true << qint64(1);
    }

    void stepMatchesFloat64Reference()
    {
        QFETCH(bool, tied);
        QFETCH(qint64, chunkRows);
        const LlamaConfig config = tied ? testutil::tinyTiedConfig() : testutil::tinyConfig();
        auto reference = randomModel(config, ComputeDType::Float64);
        auto model = createCausalLm(config, ComputeDType::Float32);
        {
            torch::NoGradGuard noGrad;
            auto source = reference->named_parameters();
            for (auto& item : model->named_parameters())
                item.value().copy_(source[item.key()]);
        }
        const auto rows = sampleRows(config.vocabSize);
        const data::Batch batch = batchOf(rows, {0, 1});
        const double expectedLoss = referenceLossAndGradients(*reference, batch);

        FlatParameters flat(allParameters(*model), torch::kFloat);
        const StepResult result = accumulateStepGradients(*model, flat, {batch}, chunkRows);
        QCOMPARE(result.lossTokens, std::int64_t(12)); // 7 + 5 response tokens after position 0
        // Tolerances: fp32 against fp64 over a 2-layer model; the loss to
        // 1e-6 relative, each gradient to 1e-5 of its largest element.
        QVERIFY2(std::abs(result.loss - expectedLoss) <= 1e-6 * std::abs(expectedLoss),
            qPrintable(QString("loss %1 vs %2")
                           .arg(result.loss, 0, 'g', 12)
                           .arg(expectedLoss, 0, 'g', 12)));
        auto referenceParameters = reference->named_parameters();
        for (const auto& slot : flat.segments()) {
            const torch::Tensor expected = referenceParameters[slot.name].grad();
            const torch::Tensor actual = flat.units()[static_cast<size_t>(slot.unit)]
                                             .masterGradients.narrow(0, slot.offset, slot.numel)
                                             .view(slot.shape);
            const double scale = expected.abs().max().item<double>();
            const double diff = testutil::maxAbsDiff(actual, expected);
            QVERIFY2(diff <= 1e-5 * scale + 1e-9,
                qPrintable(QString::fromStdString(slot.name)
                    + QString(": %1 of %2").arg(diff).arg(scale)));
        }
    }

    void adamwFollowsItsFormula()
    {
        // Two parameters, one decayed (2-D) and one not (1-D), in fp64.
        torch::Tensor matrix = torch::randn({3, 4}, torch::kDouble).requires_grad_(true);
        torch::Tensor vector = torch::randn({5}, torch::kDouble).requires_grad_(true);
        const torch::Tensor matrix0 = matrix.detach().clone();
        const torch::Tensor vector0 = vector.detach().clone();
        FlatParameters flat({{"m", matrix, true}, {"v", vector, false}}, torch::kDouble);
        const AdamWSettings s{0.9, 0.95, 1e-8, 0.1};
        FlatAdamW adam(flat, s);
        std::vector<double> p(20), m(20, 0.0), v(20, 0.0);
        for (int i = 0; i < 12; ++i)
            p[static_cast<size_t>(i)] = matrix0.reshape({-1})[i].item<double>();
        for (int i = 0; i < 5; ++i)
            p[static_cast<size_t>(12 + i)] = vector0[i].item<double>();
        for (int step = 1; step <= 3; ++step) {
            const double lr = 1e-2 * step;
            const torch::Tensor g = torch::randn({17}, torch::kDouble);
            flat.units()[0].masterGradients.copy_(g); // one unit: "m" then "v"
            adam.step(lr);
            for (int i = 0; i < 17; ++i) {
                const double gi = g[i].item<double>();
                auto& pi = p[static_cast<size_t>(i)];
                if (i < 12)
                    pi *= 1.0 - lr * s.weightDecay;
                m[static_cast<size_t>(i)] = 0.9 * m[static_cast<size_t>(i)] + 0.1 * gi;
                v[static_cast<size_t>(i)] = 0.95 * v[static_cast<size_t>(i)] + 0.05 * gi * gi;
                const double mHat = m[static_cast<size_t>(i)] / (1 - std::pow(0.9, step));
                const double vHat = v[static_cast<size_t>(i)] / (1 - std::pow(0.95, step));
                pi -= lr * mHat / (std::sqrt(vHat) + 1e-8);
            }
        }
        for (int i = 0; i < 12; ++i)
            QVERIFY(std::abs(matrix.reshape({-1})[i].item<double>() - p[static_cast<size_t>(i)])
                < 1e-12);
        for (int i = 0; i < 5; ++i)
            QVERIFY(std::abs(vector[i].item<double>() - p[static_cast<size_t>(12 + i)]) < 1e-12);
        QCOMPARE(adam.stepCount(), std::int64_t(3));
    }

    void schedule_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<qint64>("step");
        QTest::addColumn<double>("multiplier");
        // warmup 2 of 10 steps; step s uses the multiplier after s - 1 scheduler steps.
        const int cosine = static_cast<int>(config::Schedule::Cosine);
        const int linear = static_cast<int>(config::Schedule::Linear);
        const int constant = static_cast<int>(config::Schedule::Constant);
        QTest::addRow("warmup starts at 0") << cosine << qint64(1) << 0.0;
        QTest::addRow("warmup half way") << cosine << qint64(2) << 0.5;
        QTest::addRow("cosine peak") << cosine << qint64(3) << 1.0;
        QTest::addRow("cosine middle") << cosine << qint64(7) << 0.5;
        QTest::addRow("cosine last")
            << cosine << qint64(10) << 0.5 * (1 + std::cos(M_PI * 7.0 / 8.0));
        QTest::addRow("linear middle") << linear << qint64(7) << 0.5;
        QTest::addRow("linear last") << linear << qint64(10) << 1.0 / 8.0;
        QTest::addRow("constant") << constant << qint64(9) << 1.0;
        QTest::addRow("constant warmup") << constant << qint64(2) << 0.5;
    }

    void schedule()
    {
        QFETCH(int, kind);
        QFETCH(qint64, step);
        QFETCH(double, multiplier);
        const LrSchedule schedule(static_cast<config::Schedule>(kind), 2e-4, 2, 10);
        QVERIFY(std::abs(schedule.multiplierAt(step) - multiplier) < 1e-12);
        QVERIFY(std::abs(schedule.rateAt(step) - 2e-4 * multiplier) < 1e-16);
    }

    void warmupRatioRoundsUp()
    {
        config::TrainingConfig training;
        training.warmupRatio = 0.03;
        QCOMPARE(warmupStepsFor(training, 100), std::int64_t(3));
        QCOMPARE(warmupStepsFor(training, 101), std::int64_t(4));
        training.warmupSteps = 5;
        QCOMPARE(warmupStepsFor(training, 101), std::int64_t(5));
    }

    void accumulationEqualsOneLargerBatch()
    {
        const LlamaConfig config = testutil::tinyConfig();
        auto model = randomModel(config, ComputeDType::Float64);
        FlatParameters flat(allParameters(*model), torch::kDouble);
        const auto rows = sampleRows(config.vocabSize);
        const StepResult whole = accumulateStepGradients(*model, flat, {batchOf(rows, {0, 1})});
        const torch::Tensor expected = masterGradientsOf(flat).clone();
        flat.zeroGradients();
        const StepResult split =
            accumulateStepGradients(*model, flat, {batchOf(rows, {0}), batchOf(rows, {1})});
        QCOMPARE(split.lossTokens, whole.lossTokens);
        QVERIFY(std::abs(split.loss - whole.loss) < 1e-12);
        QVERIFY(testutil::maxAbsDiff(masterGradientsOf(flat), expected) < 1e-12);
    }

    void clippingScalesToTheLimit()
    {
        torch::Tensor a = torch::zeros({4}, torch::kFloat).requires_grad_(true);
        FlatParameters flat({{"a", a, false}}, torch::kFloat);
        flat.units()[0].masterGradients.copy_(torch::tensor({3.0F, 4.0F, 0.0F, 0.0F}));
        QVERIFY(std::abs(flat.clipGradientNorm(1.0) - 5.0) < 1e-6);
        QVERIFY(std::abs(masterGradientsOf(flat).norm().item<double>() - 1.0) < 1e-5);
        QVERIFY(std::abs(flat.clipGradientNorm(10.0) - 1.0) < 1e-5); // below the limit: kept
        QVERIFY(std::abs(masterGradientsOf(flat).norm().item<double>() - 1.0) < 1e-5);
    }

    void checkpointingGivesIdenticalGradients_data()
    {
        QTest::addColumn<bool>("lora");
        QTest::addRow("full") << false;
        QTest::addRow("lora with dropout") << true;
    }

    void checkpointingGivesIdenticalGradients()
    {
        QFETCH(bool, lora);
        const LlamaConfig config = testutil::tinyConfig();
        auto model = randomModel(config, ComputeDType::Float32);
        at::Generator generator = at::detail::createCPUGenerator(99);
        if (lora) {
            LoraSpec spec;
            spec.rank = 2;
            spec.dropout = 0.3;
            spec.targetModules = {"q_proj", "v_proj", "down_proj"};
            QVERIFY(attachLora(*model, spec, 5, generator).ok());
            torch::NoGradGuard noGrad;
            for (auto& [name, layer] : loraLayers(*model))
                layer->loraB().normal_(); // a non-zero update, so dropout matters
            freezeAllButLora(*model);
        }
        model->train();
        FlatParameters flat(allParameters(*model), torch::kFloat);
        const auto rows = sampleRows(config.vocabSize);
        const torch::Tensor start = generator.get_state();
        const StepResult plain = accumulateStepGradients(*model, flat, {batchOf(rows, {0, 1})});
        const torch::Tensor expected = masterGradientsOf(flat).clone();
        flat.zeroGradients();
        generator.set_state(start);
        enableActivationCheckpointing(*model, generator);
        const StepResult recomputed =
            accumulateStepGradients(*model, flat, {batchOf(rows, {0, 1})});
        QCOMPARE(recomputed.loss, plain.loss);
        QVERIFY(torch::equal(masterGradientsOf(flat), expected));
        QVERIFY(expected.abs().sum().item<double>() > 0);
    }

    void bf16MixedStaysCloseToFp32()
    {
        const LlamaConfig config = testutil::tinyConfig();
        auto model32 = randomModel(config, ComputeDType::Float32);
        auto model16 = createCausalLm(config, ComputeDType::BFloat16);
        std::vector<torch::Tensor> masters;
        {
            torch::NoGradGuard noGrad;
            auto source = model32->named_parameters();
            for (auto& item : model16->named_parameters()) {
                item.value().copy_(source[item.key()]);
                masters.push_back(source[item.key()].detach().clone());
            }
        }
        FlatParameters flat32(allParameters(*model32), torch::kFloat);
        FlatParameters flat16(allParameters(*model16), torch::kFloat, masters);
        QVERIFY(flat16.units()[0].masterSeparate);
        // masters keep the fp32 bits
        QVERIFY(torch::equal(concatenated(flat16, &FlatParameters::Unit::master),
            concatenated(flat32, &FlatParameters::Unit::master)));
        const auto rows = sampleRows(config.vocabSize);
        const StepResult a = accumulateStepGradients(*model32, flat32, {batchOf(rows, {0, 1})});
        const StepResult b = accumulateStepGradients(*model16, flat16, {batchOf(rows, {0, 1})});
        QCOMPARE(masterGradientsOf(flat16).scalar_type(), torch::kFloat);
        QVERIFY2(std::abs(a.loss - b.loss) < 0.02 * a.loss,
            qPrintable(QString("%1 vs %2").arg(a.loss).arg(b.loss)));
        const double cosine =
            torch::cosine_similarity(masterGradientsOf(flat32), masterGradientsOf(flat16), 0)
                .item<double>();
        QVERIFY2(cosine > 0.99, qPrintable(QString::number(cosine)));
        FlatAdamW adam(flat16, {});
        adam.step(1e-3);
        flat16.copyMasterToModel();
        QVERIFY(torch::equal(concatenated(flat16, &FlatParameters::Unit::values),
            concatenated(flat16, &FlatParameters::Unit::master).to(torch::kBFloat16)));
    }

    void shardGeometry_data()
    {
        QTest::addColumn<int>("count");
        QTest::addColumn<int>("rank");
        QTest::addColumn<qint64>("shardNumel");
        QTest::addColumn<qint64>("decayed"); // decayed elements in this rank's shard
        // One unit: a 2-D weight of 10 elements (decayed), a norm of 3 (not).
        QTest::addRow("one rank") << 1 << 0 << qint64(13) << qint64(10);
        QTest::addRow("4 ranks, rank 0") << 4 << 0 << qint64(4) << qint64(4);
        QTest::addRow("4 ranks, rank 2 straddles") << 4 << 2 << qint64(4) << qint64(2);
        QTest::addRow("4 ranks, rank 3 padding") << 4 << 3 << qint64(4) << qint64(0);
        QTest::addRow("3 ranks, rank 1") << 3 << 1 << qint64(5) << qint64(5);
    }

    void shardGeometry()
    {
        QFETCH(int, count);
        QFETCH(int, rank);
        QFETCH(qint64, shardNumel);
        QFETCH(qint64, decayed);
        torch::Tensor weight = torch::arange(10, torch::kFloat).view({2, 5}).requires_grad_(true);
        torch::Tensor norm = torch::full({3}, 7.0F).requires_grad_(true);
        ShardSpec spec{rank, count, true, true};
        FlatParameters flat({{"model.layers.0.mlp.w", weight, true},
                                {"model.layers.0.input_layernorm.weight", norm, false}},
            torch::kFloat, {}, spec);
        QCOMPARE(flat.units().size(), size_t(1));
        const FlatParameters::Unit& unit = flat.units()[0];
        QCOMPARE(unit.id, 1);
        QCOMPARE(unit.shardNumel, shardNumel);
        QCOMPARE(unit.paddedNumel, shardNumel * count);
        QCOMPARE(unit.shardDecayRange().second, decayed);
        // The master shard holds this rank's slice of [0..9, 7, 7, 7, 0...].
        const torch::Tensor whole = torch::cat({torch::arange(10, torch::kFloat),
            torch::full({3}, 7.0F), torch::zeros({unit.paddedNumel - 13})});
        QVERIFY(torch::equal(unit.master, whole.narrow(0, unit.shardOffset, shardNumel)));
        // Sharded values and gradients hold no memory between uses.
        QCOMPARE(holdsStorage(unit.values), count == 1);
        QCOMPARE(holdsStorage(unit.gradients), count == 1);
    }

    void releasedStorageKeepsTheParameterViews()
    {
        torch::Tensor weight = torch::ones({4, 4}).requires_grad_(true);
        FlatParameters flat({{"model.layers.0.w", weight, true}}, torch::kFloat);
        FlatParameters::Unit& unit = flat.units()[0];
        const auto version = weight._version();
        flat.releaseValues(unit);
        QVERIFY(!holdsStorage(unit.values));
        QVERIFY(flat.residentBytes().parameters == 0);
        flat.allocateValues(unit);
        {
            at::AutoDispatchBelowADInplaceOrView guard;
            torch::NoGradGuard noGrad;
            unit.values.fill_(2.0);
        }
        // The parameter is still a view of the unit: it sees the new memory.
        QCOMPARE(weight.data_ptr(), unit.values.data_ptr());
        QCOMPARE(weight.sum().item<double>(), 32.0);
        QCOMPARE(weight._version(), version);
        QCOMPARE(flat.peakResidentBytes().parameters, std::int64_t(16 * 4));
    }

    void chunkedLossNeverNeedsTheWholeBatch_data()
    {
        QTest::addColumn<double>("softcap");
        QTest::newRow("plain logits") << 0.0;
        QTest::newRow("softcapped logits (Gemma 2)") << 1.5;
    }

    void chunkedLossNeverNeedsTheWholeBatch()
    {
        // Every chunk size gives autograd's loss and gradients in fp64.
        QFETCH(double, softcap);
        torch::Tensor hidden = torch::randn({11, 6}, torch::kDouble).requires_grad_(true);
        torch::Tensor weight = torch::randn({9, 6}, torch::kDouble).requires_grad_(true);
        const torch::Tensor targets = torch::randint(0, 9, {11}, torch::kLong);
        torch::Tensor logits = torch::matmul(hidden, weight.t());
        if (softcap > 0)
            logits = torch::tanh(logits / softcap) * softcap;
        const torch::Tensor expected =
            torch::nn::functional::cross_entropy(logits, targets,
                torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
            / 4.0;
        expected.backward();
        const torch::Tensor hiddenGrad = hidden.grad().clone();
        const torch::Tensor weightGrad = weight.grad().clone();
        for (const std::int64_t chunk : {1, 4, 11, 100}) {
            hidden.mutable_grad().reset();
            weight.mutable_grad().reset();
            const torch::Tensor loss =
                chunkedCrossEntropy(hidden, weight, targets, 4.0, chunk, softcap);
            loss.backward();
            QVERIFY(std::abs(loss.item<double>() - expected.item<double>()) < 1e-12);
            QVERIFY(testutil::maxAbsDiff(hidden.grad(), hiddenGrad) < 1e-12);
            QVERIFY(testutil::maxAbsDiff(weight.grad(), weightGrad) < 1e-12);
        }
    }
};

QTEST_GUILESS_MAIN(TestTrainNumerics)
#include "test_train_numerics.moc"
