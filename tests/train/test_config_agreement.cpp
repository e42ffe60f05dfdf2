#include "../support/test_data.h"
#include "common/atomic_file.h"
#include "model/parameter_count.h"
#include "plan/catalog.h"
#include "train/llama_model.h"
#include "train/model_config.h"

#include <QTemporaryDir>
#include <QTest>

#include <torch/torch.h>

#include <filesystem>
#include <set>

using namespace tb;

namespace {

// stories260K's config.json, from the demo model the repository carries.
QString storiesConfig()
{
    const std::string path = tb::test::demoModelDir() + "/config.json";
    return std::filesystem::exists(path) ? QString::fromStdString(path) : QString();
}

QString readText(const QString& path)
{
    const auto text = common::readFile(path.toStdString());
    return text ? QString::fromStdString(*text) : QString();
}

// Parameters the built module holds, a tied head counted once.
std::int64_t builtParameters(const train::LlamaForCausalLm& model)
{
    std::set<const void*> seen;
    std::int64_t count = 0;
    for (const torch::Tensor& parameter : model.parameters()) {
        if (seen.insert(parameter.data_ptr()).second)
            count += parameter.numel();
    }
    return count;
}

} // namespace

// The planner and the trainer read the same config.json through one reader;
// this checks they end with the same architecture and the same parameter
// count, the trainer's counted on the module it builds.
class TestConfigAgreement : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY2(!storiesConfig().isEmpty(), "stories260K config.json is absent");
    }

    void plannerAndTrainerAgree_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<bool>("tied");
        QTest::addColumn<double>("ropeTheta");
        QTest::addColumn<qint64>("maxPositions");
        QTest::addRow("stories260K (llama, tied, GQA)")
            << readText(storiesConfig()) << true << 10000.0 << qint64(512);
        QTest::addRow("llama, untied and MHA by default")
            << R"({"model_type":"llama","hidden_size":64,"intermediate_size":160,
                "num_hidden_layers":3,"num_attention_heads":4,"vocab_size":300})"
            << false << 10000.0 << qint64(2048);
        QTest::addRow("llama, biases, head_dim, llama3 rope")
            << R"({"model_type":"llama","architectures":["LlamaForCausalLM"],"hidden_size":48,
                "intermediate_size":96,"num_hidden_layers":2,"num_attention_heads":4,
                "num_key_value_heads":2,"head_dim":16,"vocab_size":256,"attention_bias":true,
                "mlp_bias":true,"tie_word_embeddings":false,"rope_theta":500000.0,
                "max_position_embeddings":4096,"rope_scaling":{"rope_type":"llama3","factor":8.0,
                "low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":1024}})"
            << false << 500000.0 << qint64(4096);
        QTest::addRow("mistral, untied, GQA, window")
            << R"({"model_type":"mistral","architectures":["MistralForCausalLM"],"hidden_size":64,
                "intermediate_size":224,"num_hidden_layers":2,"num_attention_heads":8,
                "num_key_value_heads":2,"vocab_size":320,"sliding_window":16,
                "tie_word_embeddings":false,"rope_theta":1000000.0})"
            << false << 1000000.0 << qint64(131072);
        QTest::addRow("mistral, tied, default kv heads, attention_bias ignored")
            << R"({"model_type":"mistral","hidden_size":64,"intermediate_size":128,
                "num_hidden_layers":2,"num_attention_heads":16,"head_dim":8,"vocab_size":200,
                "tie_word_embeddings":true,"attention_bias":true,"max_position_embeddings":256})"
            << true << 10000.0 << qint64(256);
        QTest::addRow("qwen2, tied, GQA, qkv bias")
            << R"({"model_type":"qwen2","architectures":["Qwen2ForCausalLM"],"hidden_size":56,
                "intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":7,
                "num_key_value_heads":1,"vocab_size":500,"tie_word_embeddings":true,
                "rope_theta":1000000.0,"sliding_window":32,"use_sliding_window":false})"
            << true << 1000000.0 << qint64(32768);
        QTest::addRow("qwen2, untied, rope_parameters")
            << R"({"model_type":"qwen2","hidden_size":64,"intermediate_size":96,
                "num_hidden_layers":3,"num_attention_heads":8,"num_key_value_heads":4,
                "head_dim":12,"vocab_size":128,"tie_word_embeddings":false,
                "rope_parameters":{"rope_type":"default","rope_theta":20000.0},
                "max_position_embeddings":1024})"
            << false << 20000.0 << qint64(1024);
        QTest::addRow("qwen3, q/k norms, head_dim apart")
            << R"({"model_type":"qwen3","hidden_size":64,"intermediate_size":96,
                "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
                "head_dim":24,"vocab_size":128,"tie_word_embeddings":true})"
            << true << 10000.0 << qint64(32768);
        QTest::addRow("gemma2, four norms, defaults")
            << R"({"model_type":"gemma2","hidden_size":64,"intermediate_size":96,
                "num_hidden_layers":2,"num_attention_heads":4,"head_dim":16,"vocab_size":128})"
            << true << 10000.0 << qint64(8192);
        QTest::addRow("gemma3_text, four norms, q/k norms, local rope")
            << R"({"model_type":"gemma3_text","hidden_size":64,"intermediate_size":96,
                "num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":1,
                "head_dim":16,"vocab_size":128,"rope_local_base_freq":10000.0})"
            << true << 1000000.0 << qint64(131072);
        QTest::addRow("phi3, fused qkv and gate_up, untied")
            << R"({"model_type":"phi3","architectures":["Phi3ForCausalLM"],"hidden_size":64,
                "intermediate_size":96,"num_hidden_layers":2,"num_attention_heads":8,
                "num_key_value_heads":2,"vocab_size":160,"tie_word_embeddings":false,
                "sliding_window":31})"
            << false << 10000.0 << qint64(4096);
        QTest::addRow("mixtral, experts, router")
            << R"({"model_type":"mixtral","architectures":["MixtralForCausalLM"],"hidden_size":64,
                "intermediate_size":96,"num_hidden_layers":2,"num_attention_heads":4,
                "num_key_value_heads":2,"num_local_experts":4,"num_experts_per_tok":2,
                "vocab_size":128,"sliding_window":null})"
            << false << 1000000.0 << qint64(131072);
        QTest::addRow("qwen3_moe, narrow experts, q/k norms")
            << R"({"model_type":"qwen3_moe","hidden_size":64,"intermediate_size":96,
                "moe_intermediate_size":24,"num_hidden_layers":2,"num_attention_heads":4,
                "num_key_value_heads":2,"head_dim":16,"num_experts":6,"num_experts_per_tok":3,
                "vocab_size":128,"tie_word_embeddings":true})"
            << true << 10000.0 << qint64(32768);
    }
    void plannerAndTrainerAgree()
    {
        QFETCH(QString, json);
        QFETCH(bool, tied);
        QFETCH(double, ropeTheta);
        QFETCH(qint64, maxPositions);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string folder = dir.path().toStdString();
        QVERIFY(common::writeFileAtomic(folder + "/config.json", json.toStdString()).ok());

        const auto catalog = plan::Catalog::load(tb::test::sourcePath("presets"));
        QVERIFY2(catalog.ok(), catalog.ok() ? "" : catalog.error().toString().c_str());
        const auto planned = catalog->resolveModel(folder);
        QVERIFY2(planned.ok(), planned.ok() ? "" : planned.error().toString().c_str());
        const auto trained = train::loadLlamaConfig(folder);
        QVERIFY2(trained.ok(), trained.ok() ? "" : trained.error().toString().c_str());

        const model::ModelSpec& p = *planned;
        const train::LlamaConfig& t = *trained;
        QCOMPARE(t.modelType, p.modelType);
        QCOMPARE(t.hiddenSize, p.hiddenSize);
        QCOMPARE(t.intermediateSize, p.intermediateSize);
        QCOMPARE(t.numLayers, p.numLayers);
        QCOMPARE(t.numHeads, p.numHeads);
        QCOMPARE(t.numKvHeads, p.numKvHeads);
        QCOMPARE(t.headDim, p.headDim);
        QCOMPARE(t.vocabSize, p.vocabSize);
        QCOMPARE(t.maxPositionEmbeddings, p.maxPositionEmbeddings);
        QCOMPARE(t.tieWordEmbeddings, p.tieWordEmbeddings);
        QCOMPARE(t.qkvBias, p.qkvBias);
        QCOMPARE(t.outputBias, p.outputBias);
        QCOMPARE(t.mlpBias, p.mlpBias);
        QCOMPARE(t.experts, p.experts);
        QCOMPARE(t.expertsPerToken, p.expertsPerToken);
        QCOMPARE(t.expertIntermediateSize, p.expertIntermediateSize);
        // Numbers the planner does not keep, against the file.
        QCOMPARE(t.tieWordEmbeddings, tied);
        QCOMPARE(t.ropeTheta, ropeTheta);
        QCOMPARE(t.maxPositionEmbeddings, maxPositions);

        const train::LlamaForCausalLm built(t, torch::kFloat);
        const std::int64_t plannedCount = model::countParameters(p).total;
        QCOMPARE(builtParameters(built), plannedCount);
        QCOMPARE(t.parameterCount(), plannedCount);
    }
};

QTEST_GUILESS_MAIN(TestConfigAgreement)
#include "test_config_agreement.moc"
