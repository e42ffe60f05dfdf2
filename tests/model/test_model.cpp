#include "../support/qt_test_paths.h"
#include "common/atomic_file.h"
#include "model/model_preset.h"
#include "model/parameter_count.h"
#include "plan/catalog.h"

#include <QtTest>

#include <filesystem>

using namespace tb;

namespace {

QString presetsDir()
{
    return tb::test::qSourcePath("presets");
}

const char* kMinimalPreset = R"(name: Tiny
model_type: llama
hidden_size: 64
intermediate_size: 172
num_layers: 5
num_heads: 8
num_kv_heads: 4
vocab_size: 512
tie_word_embeddings: true
published_params: 260032
published_params_source: test
source: test
)";

} // namespace

class TestModel : public QObject {
    Q_OBJECT

private slots:
    // Every preset file: its architecture gives exactly its published total.
    void presetCountEqualsPublished_data()
    {
        QTest::addColumn<QString>("file");
        for (const auto& entry :
            std::filesystem::directory_iterator(presetsDir().toStdString() + "/models"))
            if (entry.path().extension() == ".yaml")
                QTest::addRow("%s", entry.path().filename().string().c_str())
                    << QString::fromStdString(entry.path().string());
    }
    void presetCountEqualsPublished()
    {
        QFETCH(QString, file);
        const common::Result<model::ModelSpec> spec = model::loadModelPreset(file.toStdString());
        QVERIFY2(spec.ok(), spec.ok() ? "" : spec.error().message.c_str());
        QVERIFY(spec->publishedParams.has_value());
        QCOMPARE(model::countParameters(*spec).total, *spec->publishedParams);
    }

    // The issue's acceptance numbers, independent of the YAML's own field.
    void acceptanceCounts_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<qint64>("expected");
        QTest::addRow("Llama-3-8B") << "Llama-3-8B" << qint64(8'030'261'248);
        QTest::addRow("Mistral-7B-v0.1") << "Mistral-7B-v0.1" << qint64(7'241'732'096);
        QTest::addRow("Llama-3.3-70B")
            << "meta-llama/Llama-3.3-70B-Instruct" << qint64(70'553'706'496);
        QTest::addRow("Llama-2-7B") << "llama-2-7b" << qint64(6'738'415'616);
        QTest::addRow("Qwen2.5-7B") << "Qwen/Qwen2.5-7B" << qint64(7'615'616'512);
        QTest::addRow("Gemma-2-9B") << "gemma-2-9b" << qint64(9'241'705'984);
        QTest::addRow("Gemma-2-2B") << "google/gemma-2-2b" << qint64(2'614'341'888);
        QTest::addRow("Gemma-2-27B") << "gemma2-27b" << qint64(27'227'128'320);
        QTest::addRow("Gemma-3-1B") << "google/gemma-3-1b-it" << qint64(999'885'952);
        QTest::addRow("Phi-4") << "microsoft/phi-4" << qint64(14'659'507'200);
        QTest::addRow("SmolLM2-135M") << "SMOLLM2-135M" << qint64(134'515'008);
        QTest::addRow("Mixtral-8x7B") << "mistralai/Mixtral-8x7B-v0.1" << qint64(46'702'792'704);
        QTest::addRow("Qwen3-0.6B") << "qwen3-0.6b" << qint64(596'049'920);
        QTest::addRow("Qwen3-4B") << "Qwen/Qwen3-4B" << qint64(4'022'468'096);
        QTest::addRow("Qwen3-8B") << "qwen3-8b" << qint64(8'190'735'360);
        QTest::addRow("Qwen3-14B") << "qwen3-14b" << qint64(14'768'307'200);
        QTest::addRow("Qwen3-32B") << "Qwen3-32B" << qint64(32'762'123'264);
        QTest::addRow("Phi-4-mini") << "phi-4-mini" << qint64(3'836'021'760);
        QTest::addRow("Qwen3-30B-A3B") << "qwen3-30b-a3b" << qint64(30'532'122'624);
        // Issue 23's additions, each equal to transformers 5.23's count of
        // its config (test_gpt_oss_count builds gpt-oss's there too).
        QTest::addRow("Qwen3-1.7B") << "Qwen/Qwen3-1.7B" << qint64(1'720'574'976);
        QTest::addRow("Gemma-3-4B") << "google/gemma-3-4b-it" << qint64(3'880'263'168);
        QTest::addRow("Gemma-3-12B") << "gemma3-12b" << qint64(11'766'034'176);
        QTest::addRow("Gemma-3-27B") << "Gemma-3-27B" << qint64(27'009'346'304);
        QTest::addRow("gpt-oss-20b") << "openai/gpt-oss-20b" << qint64(20'914'757'184);
        QTest::addRow("gpt-oss-120b") << "gpt-oss-120b" << qint64(116'829'156'672);
    }

    // A mixture of experts holds every expert and runs k of them a token:
    // the "active" figure its authors publish (Mixtral: 12.9 B of 46.7 B,
    // mistral.ai/news/mixtral-of-experts; Qwen3-30B-A3B: 3.3 B of 30.5 B,
    // its model card), exactly as counted here.
    void activeParameters_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<qint64>("active");
        QTest::addColumn<qint64>("matmul");
        QTest::addRow("Mixtral-8x7B") << "mixtral-8x7b" << qint64(12'879'925'248)
                                      << qint64(12'879'925'248 - 131'072'000 - 32 * 8192 - 4096);
        QTest::addRow("Qwen3-30B-A3B")
            << "Qwen3-30B-A3B" << qint64(3'353'032'704)
            << qint64(3'353'032'704 - 311'164'928 - 48 * (4096 + 256) - 2048);
        // gpt-oss's model card (arXiv:2508.10925) gives 3.6 B and 5.1 B
        // active, the embedding table left out: 3,608,307,264 and
        // 5,132,849,472 here. Its matmuls carry biases, the sinks do not.
        QTest::addRow("gpt-oss-20b") << "gpt-oss-20b" << qint64(3'608'307'264 + 579'133'440)
                                     << qint64(3'608'307'264 - 24 * (2 * 2880 + 64) - 2880);
        QTest::addRow("gpt-oss-120b") << "gpt-oss-120b" << qint64(5'132'849'472 + 579'133'440)
                                      << qint64(5'132'849'472 - 36 * (2 * 2880 + 64) - 2880);
        QTest::addRow("dense: all") << "Llama-3-8B" << qint64(8'030'261'248)
                                    << qint64(8'030'261'248 - 525'336'576 - 32 * 8192 - 4096);
    }
    void activeParameters()
    {
        QFETCH(QString, name);
        QFETCH(qint64, active);
        QFETCH(qint64, matmul);
        const auto catalog = plan::Catalog::load(presetsDir().toStdString());
        QVERIFY(catalog.ok());
        const model::ModelSpec* spec = catalog->findModel(name.toStdString());
        QVERIFY(spec);
        const model::ParameterCount count = model::countParameters(*spec);
        QCOMPARE(count.active, active);
        // The N of 6N: what a token multiplies (active, less the embedding
        // lookup and the norms).
        QCOMPARE(count.matmul, matmul);
    }
    void acceptanceCounts()
    {
        QFETCH(QString, name);
        QFETCH(qint64, expected);
        const auto catalog = plan::Catalog::load(presetsDir().toStdString());
        QVERIFY2(catalog.ok(), catalog.ok() ? "" : catalog.error().message.c_str());
        const model::ModelSpec* spec = catalog->findModel(name.toStdString());
        QVERIFY(spec);
        QCOMPARE(model::countParameters(*spec).total, expected);
    }

    void issueListIsCovered()
    {
        const auto catalog = plan::Catalog::load(presetsDir().toStdString());
        QVERIFY(catalog.ok());
        for (const char* name : {"Llama-3-8B", "Llama-3-8B-Instruct", "Llama-3.1-8B",
                 "Llama-3.1-8B-Instruct", "Llama-3.3-70B-Instruct", "Llama-2-7B", "Llama-2-13B",
                 "Llama-2-70B", "Mistral-7B-v0.1", "Phi-4", "Qwen2.5-7B", "Qwen2.5-14B",
                 "Qwen2.5-72B", "Gemma-2-9B", "TinyLlama-1.1B", "SmolLM2-135M", "SmolLM2-360M",
                 "SmolLM2-1.7B", "meta-llama/Meta-Llama-3-8B"})
            QVERIFY2(catalog->findModel(name), name);
        // Issue 23: the families people fine-tune now.
        for (const char* name : {"Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B", "Qwen3-14B",
                 "Qwen3-32B", "Qwen3-30B-A3B", "Gemma-2-2B", "Gemma-2-9B", "Gemma-2-27B",
                 "Gemma-3-1B", "Gemma-3-4B", "Gemma-3-12B", "Gemma-3-27B", "Phi-4",
                 "Phi-4-mini-instruct", "Mixtral-8x7B-v0.1", "gpt-oss-20b", "gpt-oss-120b"})
            QVERIFY2(catalog->findModel(name), name);
    }

    void partsAddUp()
    {
        const auto catalog = plan::Catalog::load(presetsDir().toStdString());
        QVERIFY(catalog.ok());
        for (const model::ModelSpec& spec : catalog->models()) {
            const model::ParameterCount c = model::countParameters(spec);
            QCOMPARE(c.perLayer, c.attentionPerLayer + c.mlpPerLayer + c.normsPerLayer);
            QCOMPARE(c.total, c.embedding + c.layers + c.finalNorm + c.lmHead);
            QCOMPARE(c.lmHead == 0, spec.tieWordEmbeddings);
            QVERIFY(c.matmul < c.total + c.embedding);
            QVERIFY(c.largestLayer >= c.embedding);
        }
    }

    void linearLayerNames()
    {
        model::ModelSpec spec = *model::parseModelPreset(kMinimalPreset, "t");
        QStringList names;
        for (const model::LinearLayer& l : model::blockLinearLayers(spec))
            names << QString::fromStdString(l.name);
        QCOMPARE(names,
            QStringList(
                {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
        spec.fusedQkv = true;
        names.clear();
        for (const model::LinearLayer& l : model::blockLinearLayers(spec))
            names << QString::fromStdString(l.name);
        QCOMPARE(names, QStringList({"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
        // A mixture of experts: the router, then the experts' projections.
        spec.fusedQkv = false;
        spec.experts = 4;
        spec.expertsPerToken = 2;
        spec.expertIntermediateSize = 32;
        names.clear();
        for (const model::LinearLayer& l : model::blockLinearLayers(spec))
            names << QString::fromStdString(l.name) + "x" + QString::number(l.copies);
        QCOMPARE(names,
            QStringList({"q_projx1", "k_projx1", "v_projx1", "o_projx1", "gatex1", "gate_projx4",
                "up_projx4", "down_projx4"}));
        // Fusing changes names, not the count.
        spec.fusedQkv = false;
        const auto separate = model::countParameters(spec).total;
        spec.fusedQkv = true;
        QCOMPARE(model::countParameters(spec).total, separate);
    }

    void presetErrors_data()
    {
        QTest::addColumn<QString>("yaml");
        QTest::addColumn<QString>("expected");
        const QString base = kMinimalPreset;
        QTest::addRow("unknown key") << base + "hidden_sizes: 3\n"
                                     << "hidden_sizes: unknown key";
        QTest::addRow("duplicate key")
            << base + "num_layers: 6\n"
            << "bad.yaml:13:1: num_layers: duplicate key (first given on line 5)";
        QTest::addRow("not an integer") << QString(base).replace("num_layers: 5",
            "num_layers: five") << "bad.yaml:5:13: num_layers: got five, expected an integer";
        QTest::addRow("negative") << QString(base).replace("hidden_size: 64", "hidden_size: -64")
                                  << "hidden_size: got -64";
        QTest::addRow("missing") << QString(base).replace("vocab_size: 512\n", "")
                                 << "vocab_size: missing";
        QTest::addRow("kv not dividing") << QString(base).replace("num_kv_heads: 4",
            "num_kv_heads: 3") << "num_kv_heads: 3 does not divide num_heads 8";
        QTest::addRow("bad norm") << base + "norm: batchnorm\n"
                                  << "expected rmsnorm or layernorm";
        QTest::addRow("not yaml") << "name: [unclosed"
                                  << "not valid YAML";
        QTest::addRow("a list") << "- 1\n- 2\n"
                                << "expected a mapping";
        QTest::addRow("overflow") << QString(base).replace(
            "hidden_size: 64", "hidden_size: 99999999999999999999")
                                  << "hidden_size: got 99999999999999999999, expected an integer";
    }
    void presetErrors()
    {
        QFETCH(QString, yaml);
        QFETCH(QString, expected);
        const auto spec = model::parseModelPreset(yaml.toStdString(), "bad.yaml");
        QVERIFY(!spec.ok());
        const QString message = QString::fromStdString(spec.error().message);
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY2(message.startsWith("bad.yaml"), qPrintable(message));
    }

    void presetRoundTrip()
    {
        const auto catalog = plan::Catalog::load(presetsDir().toStdString());
        QVERIFY(catalog.ok());
        for (const model::ModelSpec& spec : catalog->models()) {
            const auto again = model::parseModelPreset(model::modelPresetYaml(spec), "round");
            QVERIFY2(again.ok(), again.ok() ? "" : again.error().message.c_str());
            QCOMPARE(model::countParameters(*again).total, model::countParameters(spec).total);
            QCOMPARE(again->hfRepoId, spec.hfRepoId);
            QCOMPARE(again->aliases, spec.aliases);
        }
    }

    void catalogRejectsDuplicateNames()
    {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        std::filesystem::copy(
            presetsDir().toStdString(), root, std::filesystem::copy_options::recursive);
        std::string copy = *common::readFile(root + "/models/llama-3-8b.yaml");
        QVERIFY(common::writeFileAtomic(root + "/models/zz-copy.yaml", copy).ok());
        const auto catalog = plan::Catalog::load(root);
        QVERIFY(!catalog.ok());
        QVERIFY2(QString::fromStdString(catalog.error().message).contains("duplicate"),
            catalog.error().message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestModel)

#include "test_model.moc"
