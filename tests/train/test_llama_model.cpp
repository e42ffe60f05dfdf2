#include "train/evaluation.h"
#include "train/generation.h"
#include "train/llama_model.h"
#include "train/model_loader.h"
#include "train_test_util.h"

#include "common/atomic_file.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"

#include <QTemporaryDir>
#include <QTest>

using namespace tb::train;
using namespace tb::train::testutil;

// The model's machinery on tiny random models: the two attention paths,
// the KV cache, padding, sliding windows, saving and loading, and the
// loader's refusals.
namespace {

std::shared_ptr<LlamaForCausalLm> randomModel(
    const LlamaConfig& config, torch::ScalarType dtype, std::uint64_t seed = 7)
{
    auto model = std::make_shared<LlamaForCausalLm>(config, dtype);
    model->initializeRandom(seed, 0.3);
    model->eval();
    return model;
}

torch::Tensor randomIds(
    const LlamaConfig& config, std::int64_t batch, std::int64_t tokens, std::uint64_t seed)
{
    at::Generator generator = at::detail::createCPUGenerator(seed);
    return torch::randint(config.vocabSize, {batch, tokens}, generator, torch::kLong);
}

// A model folder: config.json and the weights as model.safetensors.
bool saveFolder(const std::string& folder, LlamaForCausalLm& model)
{
    return tb::common::writeFileAtomic(folder + "/config.json", configJson(model.config())).ok()
        && saveWeights(model, folder + "/model.safetensors", ComputeDType::Float64).ok();
}

} // namespace

class TestLlamaModel : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { setComputeThreads(1); }

    void parameterNamesAndCountFollowTransformers()
    {
        const LlamaConfig config = tinyConfig();
        auto model = randomModel(config, torch::kFloat);
        std::int64_t count = 0;
        std::set<std::string> names;
        for (const auto& item : model->named_parameters()) {
            count += item.value().numel();
            names.insert(item.key());
        }
        QCOMPARE(count, config.parameterCount());
        for (const char* name :
            {"model.embed_tokens.weight", "model.layers.1.self_attn.q_proj.bias",
                "model.layers.0.self_attn.k_proj.weight", "model.layers.0.mlp.gate_proj.weight",
                "model.layers.1.post_attention_layernorm.weight", "model.norm.weight",
                "lm_head.weight"})
            QVERIFY2(names.contains(name), name);
        QVERIFY(!names.contains("model.layers.0.self_attn.o_proj.bias"));
        auto tied = randomModel(tinyTiedConfig(), torch::kFloat);
        QCOMPARE(tied->named_parameters().size(),
            model->named_parameters().size() - 7); // no head, no q/k/v biases
        QVERIFY(tied->outputWeight().is_same(tied->model().embedding().weight()));
    }

    void fusedAttentionMatchesPlain_data()
    {
        QTest::addColumn<bool>("tied");
        QTest::addColumn<bool>("fp64");
        QTest::addColumn<double>("tolerance");
        QTest::addRow("qwen2-like fp64") << false << true << 1e-12;
        QTest::addRow("llama3-like fp64") << true << true << 1e-12;
        QTest::addRow("qwen2-like fp32") << false << false << 2e-5;
    }
    void fusedAttentionMatchesPlain()
    {
        QFETCH(bool, tied);
        QFETCH(bool, fp64);
        QFETCH(double, tolerance);
        const LlamaConfig config = tied ? tinyTiedConfig() : tinyConfig();
        auto model = randomModel(config, fp64 ? torch::kDouble : torch::kFloat);
        const torch::Tensor input = randomIds(config, 2, 11, 1);
        torch::NoGradGuard noGrad;
        model->setAttentionBackend(AttentionBackend::Plain);
        const torch::Tensor plain = model->forward(input);
        model->setAttentionBackend(AttentionBackend::Fused);
        const torch::Tensor fused = model->forward(input);
        QVERIFY(maxAbsDiff(plain, fused) <= tolerance);
        QVERIFY(plain.abs().max().item<double>() > 0.1); // not a degenerate model
    }

    void kvCacheMatchesFullForward_data()
    {
        QTest::addColumn<int>("backend");
        QTest::addRow("fused") << int(AttentionBackend::Fused);
        QTest::addRow("plain") << int(AttentionBackend::Plain);
    }
    void kvCacheMatchesFullForward()
    {
        QFETCH(int, backend);
        const LlamaConfig config = tinyTiedConfig();
        auto model = randomModel(config, torch::kDouble);
        model->setAttentionBackend(static_cast<AttentionBackend>(backend));
        const torch::Tensor input = randomIds(config, 2, 12, 2);
        torch::NoGradGuard noGrad;
        const torch::Tensor full = model->forward(input);
        KvCache cache;
        // A prefix, one token at a time, then several at once after a cache (masked path).
        std::vector<torch::Tensor> pieces{model->forward(input.slice(1, 0, 5), &cache)};
        for (std::int64_t t = 5; t < 8; ++t)
            pieces.push_back(model->forward(input.slice(1, t, t + 1), &cache));
        pieces.push_back(model->forward(input.slice(1, 8, 12), &cache));
        QCOMPARE(cache.length(), 12);
        QVERIFY(maxAbsDiff(torch::cat(pieces, 1), full) <= 1e-12);
    }

    void slidingWindowLimitsAttention()
    {
        LlamaConfig config = tinyConfig();
        config.modelType = "mistral";
        config.numLayers = 1; // one layer: position t sees exactly tokens t-2..t
        config.slidingWindow = 3;
        auto model = randomModel(config, torch::kDouble);
        torch::Tensor input = randomIds(config, 1, 9, 3);
        torch::NoGradGuard noGrad;
        const torch::Tensor before = model->forward(input);
        torch::Tensor changedFar = input.clone();
        changedFar[0][5] = (input[0][5].item<std::int64_t>() + 1) % config.vocabSize;
        const torch::Tensor after = model->forward(changedFar);
        QVERIFY(maxAbsDiff(after[0][8], before[0][8]) == 0.0); // 5 is outside 6..8
        QVERIFY(maxAbsDiff(after[0][7], before[0][7]) > 1e-6); // 5 is inside 5..7
        model->setAttentionBackend(AttentionBackend::Plain);
        QVERIFY(maxAbsDiff(model->forward(input), before) <= 1e-12);
        KvCache cache;
        model->forward(input.slice(1, 0, 4), &cache);
        const torch::Tensor rest = model->forward(input.slice(1, 4, 9), &cache);
        QVERIFY(maxAbsDiff(rest, before.slice(1, 4, 9)) <= 1e-12);
    }

    void rightPaddingLeavesRealPositionsAlone()
    {
        const LlamaConfig config = tinyConfig();
        auto model = randomModel(config, torch::kDouble);
        const torch::Tensor shortIds = randomIds(config, 1, 4, 4);
        torch::Tensor padded = torch::zeros({2, 7}, torch::kLong);
        padded.slice(1, 0, 4)[0].copy_(shortIds[0]);
        padded[1].copy_(randomIds(config, 1, 7, 5)[0]);
        torch::NoGradGuard noGrad;
        QVERIFY(maxAbsDiff(model->forward(padded)[0].slice(0, 0, 4), model->forward(shortIds)[0])
            <= 1e-12);
    }

    void evaluationEqualsDirectCrossEntropy()
    {
        const LlamaConfig config = tinyConfig();
        auto model = randomModel(config, torch::kDouble);
        const std::vector<std::vector<std::int32_t>> sequences = {
            {1, 5, 7, 9, 2}, {3, 4}, {8, 8, 8, 1, 2, 3, 4, 5, 6}, {7}};
        double total = 0.0;
        std::int64_t count = 0;
        {
            torch::NoGradGuard noGrad;
            for (const auto& sequence : sequences) {
                const std::vector<std::int64_t> values(
                    sequence.begin(), sequence.begin() + std::min<size_t>(sequence.size(), 6));
                if (values.size() < 2)
                    continue;
                const torch::Tensor logits = model->forward(ids(values))[0];
                const torch::Tensor targets = torch::tensor(values, torch::kLong).slice(0, 1);
                total += torch::nn::functional::cross_entropy(
                    logits.slice(0, 0, logits.size(0) - 1), targets,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                             .item<double>();
                count += targets.size(0);
            }
        }
        EvalOptions options;
        options.maxTokens = 6;
        options.batchSize = 2;
        std::int64_t progressCalls = 0;
        options.progress = [&](std::int64_t, std::int64_t) { return ++progressCalls > 0; };
        const auto result = evaluateLoss(*model, sequences, options);
        QVERIFY(result.ok());
        QCOMPARE(result->predictedTokens, count);
        QCOMPARE(result->truncatedSequences, 1);
        QCOMPARE(result->droppedTokens, 3);
        QCOMPARE(progressCalls, 2);
        QVERIFY(std::abs(result->meanLoss - total / static_cast<double>(count)) < 1e-12);
        QVERIFY(std::abs(result->perplexity - std::exp(result->meanLoss)) < 1e-9);

        options.progress = [](std::int64_t, std::int64_t) { return false; };
        QVERIFY(!evaluateLoss(*model, sequences, options).ok());
        options.progress = {};
        const auto bad = evaluateLoss(*model, {{1, 2, 99}}, options);
        QVERIFY(!bad.ok());
        QVERIFY(QString::fromStdString(bad.error().message).contains("token id 99 is outside"));
    }

    void savedFolderLoadsIdentically()
    {
        const LlamaConfig config = tinyTiedConfig();
        auto model = randomModel(config, torch::kDouble);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(saveFolder(folder, *model));
        auto loaded = loadCausalLm(folder, ComputeDType::Float64);
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
        const torch::Tensor input = randomIds(config, 1, 6, 6);
        torch::NoGradGuard noGrad;
        QCOMPARE(maxAbsDiff((*loaded)->forward(input), model->forward(input)), 0.0);
    }

    void shardedWeightsLoad()
    {
        const LlamaConfig config = tinyConfig();
        auto model = randomModel(config, torch::kFloat);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(tb::common::writeFileAtomic(folder + "/config.json", configJson(config)).ok());
        std::vector<torch::Tensor> keep;
        std::vector<tb::safetensors::TensorToWrite> first, second;
        std::map<std::string, std::string> shardOf;
        for (const auto& item : model->named_parameters()) {
            keep.push_back(item.value().detach().contiguous());
            const bool inFirst = item.key().find("layers.1.") == std::string::npos;
            (inFirst ? first : second)
                .push_back({item.key(), tb::safetensors::DType::F32, keep.back().sizes().vec(),
                    {static_cast<const std::byte*>(keep.back().data_ptr()), keep.back().nbytes()}});
            shardOf[item.key()] =
                inFirst ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
        }
        QVERIFY(
            tb::safetensors::writeSafetensors(folder + "/model-00001-of-00002.safetensors", first)
                .ok());
        QVERIFY(
            tb::safetensors::writeSafetensors(folder + "/model-00002-of-00002.safetensors", second)
                .ok());
        QVERIFY(
            tb::safetensors::writeShardIndex(folder + "/model.safetensors.index.json", shardOf, 0)
                .ok());
        auto loaded = loadCausalLm(folder, ComputeDType::Float32);
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
        const torch::Tensor input = randomIds(config, 1, 5, 7);
        torch::NoGradGuard noGrad;
        QCOMPARE(maxAbsDiff((*loaded)->forward(input), model->forward(input)), 0.0);
    }

    void loaderNamesTheProblem_data()
    {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("expected");
        QTest::addRow("missing")
            << "drop model.layers.1.mlp.up_proj.weight"
            << "lacks 1 tensors that config.json implies: model.layers.1.mlp.up_proj.weight";
        QTest::addRow("leftover")
            << "add model.layers.2.mlp.up_proj.weight"
            << "holds 1 tensors this model does not have: model.layers.2.mlp.up_proj.weight";
        QTest::addRow("shape")
            << "reshape model.layers.0.self_attn.k_proj.weight"
            << "tensor 'model.layers.0.self_attn.k_proj.weight': shape [6, 24], but "
               "config.json implies [12, 12]";
        QTest::addRow("integer dtype")
            << "int model.norm.weight"
            << "tensor 'model.norm.weight': dtype I32 is not a float type";
        QTest::addRow("tied head differs")
            << "add lm_head.weight"
            << "tensor 'lm_head.weight': differs from model.embed_tokens.weight";
        QTest::addRow("tied head equal") << "add equal lm_head.weight"
                                         << "";
        QTest::addRow("rotary buffer") << "add model.layers.0.self_attn.rotary_emb.inv_freq"
                                       << "";
        QTest::addRow("foreign names") << "rename all"
                                       << "are these Hugging Face (transformers) names?";
    }
    void loaderNamesTheProblem()
    {
        QFETCH(QString, edit);
        QFETCH(QString, expected);
        const LlamaConfig config = tinyTiedConfig(); // q/k/v/o all [12, 12] or [12, 24]
        auto model = randomModel(config, torch::kFloat);
        const std::string action = edit.section(' ', 0, -2).toStdString();
        const std::string target = edit.section(' ', -1).toStdString();
        std::vector<torch::Tensor> keep;
        std::vector<tb::safetensors::TensorToWrite> tensors;
        auto add = [&](const std::string& name, torch::Tensor tensor,
                       tb::safetensors::DType dtype) {
            keep.push_back(tensor.contiguous());
            tensors.push_back({name, dtype, keep.back().sizes().vec(),
                {static_cast<const std::byte*>(keep.back().data_ptr()), keep.back().nbytes()}});
        };
        for (const auto& item : model->named_parameters()) {
            const torch::Tensor value = item.value().detach();
            if (item.key() == target && action == "drop")
                continue;
            if (item.key() == target && action == "reshape")
                add(item.key(), value.reshape({6, 24}), tb::safetensors::DType::F32);
            else if (item.key() == target && action == "int")
                add(item.key(), value.to(torch::kInt), tb::safetensors::DType::I32);
            else
                add(action == "rename" ? "transformer." + item.key() : item.key(), value,
                    tb::safetensors::DType::F32);
        }
        if (action == "add")
            add(target, torch::ones_like(model->outputWeight()), tb::safetensors::DType::F32);
        if (action == "add equal")
            add(target, model->outputWeight().detach(), tb::safetensors::DType::F32);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(tb::common::writeFileAtomic(folder + "/config.json", configJson(config)).ok());
        QVERIFY(tb::safetensors::writeSafetensors(folder + "/model.safetensors", tensors).ok());
        const auto loaded = loadCausalLm(folder, ComputeDType::Float32);
        if (expected.isEmpty()) {
            QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
            return;
        }
        QVERIFY(!loaded.ok());
        QVERIFY2(QString::fromStdString(loaded.error().toString()).contains(expected),
            loaded.error().toString().c_str());
    }

    void badConfigIsNamed()
    {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(tb::common::writeFileAtomic(folder + "/config.json",
            R"({"model_type":"gpt2","hidden_size":64,"intermediate_size":128,
                    "num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100})")
                    .ok());
        const auto loaded = loadCausalLm(folder, ComputeDType::Float32);
        QVERIFY(!loaded.ok());
        QVERIFY(QString::fromStdString(loaded.error().toString())
                    .contains("config.json: field 'model_type'"));
        QVERIFY(!loadCausalLm(folder + "/nowhere", ComputeDType::Float32).ok());
    }

    void replacedProjectionKeepsItsName()
    {
        const LlamaConfig config = tinyConfig();
        auto model = randomModel(config, torch::kDouble);
        QCOMPARE(model->projections().size(), size_t(7 * config.numLayers));
        const torch::Tensor input = randomIds(config, 1, 5, 8);
        torch::NoGradGuard noGrad;
        const torch::Tensor before = model->forward(input);
        const std::string name = "model.layers.1.self_attn.v_proj";
        auto old = std::dynamic_pointer_cast<DenseLinear>(model->projections()[9].second);
        QCOMPARE(model->projections()[9].first, name);
        auto copy = std::make_shared<DenseLinear>(old->inFeatures(), old->outFeatures(), true,
            torch::TensorOptions().dtype(torch::kDouble));
        copy->weight().copy_(old->weight() * 2.0);
        copy->bias().copy_(old->bias());
        model->replaceProjection(name, copy);
        QVERIFY(model->projections()[9].second == copy);
        QVERIFY(model->named_parameters().find(name + ".weight")->is_same(copy->weight()));
        QVERIFY(maxAbsDiff(model->forward(input), before) > 1e-6);
        copy->weight().copy_(old->weight());
        QVERIFY(maxAbsDiff(model->forward(input), before) <= 1e-12);
    }

    void samplingIsSeededAndNucleusBounded()
    {
        std::uint64_t state = 42;
        const std::vector<double> logits = {0.0, std::log(3.0), -50.0};
        QCOMPARE(pickToken(logits, 0.0, 1.0, state), 1);
        QCOMPARE(pickToken(logits, 1.0, 1e-9, state), 1); // nucleus of one
        int ones = 0;
        const int draws = 4000;
        for (int i = 0; i < draws; ++i)
            ones += pickToken(logits, 1.0, 1.0, state) == 1;
        // p = 3/4; 4000 draws have a standard deviation of 0.007.
        QVERIFY(std::abs(ones / double(draws) - 0.75) < 0.03);
        // top_p 0.7 keeps only the token of mass 0.75.
        for (int i = 0; i < 50; ++i)
            QCOMPARE(pickToken(logits, 1.0, 0.7, state), 1);
    }

    void generationStopsAndRepeats()
    {
        const LlamaConfig config = tinyTiedConfig();
        auto model = randomModel(config, torch::kFloat);
        GenerateOptions options;
        options.maxNewTokens = 20;
        options.temperature = 1.0;
        options.seed = 11;
        const auto first = generate(*model, {1, 2, 3}, options);
        const auto again = generate(*model, {1, 2, 3}, options);
        QVERIFY(first.ok() && again.ok());
        QCOMPARE(first->size(), size_t(20));
        QCOMPARE(*first, *again);
        options.stopIds = {(*first)[4]};
        const auto stopped = generate(*model, {1, 2, 3}, options);
        QVERIFY(stopped.ok());
        QVERIFY(stopped->size() <= 5);
        QCOMPARE(stopped->back(), (*first)[4]);
        // The context window bounds the continuation.
        options.stopIds.clear();
        options.maxNewTokens = 1000;
        const auto bounded = generate(*model, {1}, options);
        QCOMPARE(static_cast<std::int64_t>(bounded->size()), config.maxPositionEmbeddings - 1);
        QVERIFY(!generate(*model, {}, options).ok());
        QVERIFY(!generate(*model, {1, 999}, options).ok());
    }
};

QTEST_GUILESS_MAIN(TestLlamaModel)
#include "test_llama_model.moc"
