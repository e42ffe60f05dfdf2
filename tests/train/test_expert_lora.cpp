#include "../support/test_paths.h"
#include "common/atomic_file.h"
#include "common/text.h"
#include "expert_lora_fixture.h"
#include "safetensors/safetensors_file.h"
#include "train/expert_lora.h"
#include "train/lora.h"
#include "train/model_config.h"
#include "train/model_loader.h"
#include "train/nf4.h"
#include "train/peft_adapter.h"
#include "train/training_session.h"
#include "train_test_util.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QTest>

// LoRA on a mixture of experts' weights (peft's target_parameters): the
// targets it takes and refuses, peft's per-expert update worked out here
// from its layout, the adapter under peft's names, and QLoRA's NF4 experts
// under it. tests/reference/test_expert_lora.cpp holds the same against peft.
using namespace tb;
using namespace tb::train;

using tb::test::expertSpec;
using tb::test::kAttention;
using tb::test::tinyMoeConfig;

Q_DECLARE_METATYPE(std::vector<std::string>)

namespace {

std::shared_ptr<LlamaForCausalLm> moeModel(
    const std::string& modelType, ComputeDType dtype = ComputeDType::Float64)
{
    auto model = createCausalLm(tinyMoeConfig(modelType), dtype);
    model->initializeRandom(3);
    return model;
}

// Every B of the experts' LoRA drawn away from zero, so the update counts.
void randomizeExpertB(LlamaForCausalLm& model)
{
    torch::NoGradGuard noGrad;
    torch::manual_seed(5);
    for (auto& item : model.named_parameters())
        if (isExpertLoraParameter(item.key()) && item.key().find(".lora_B.") != std::string::npos)
            item.value().normal_(0.0, 0.5);
}

// peft's delta of expert e, written out from its layout: A [r E, in] read as
// [E, r, in], B [out, r E] as [out, r, E]; scaling B_e A_e.
torch::Tensor peftDelta(ExpertLoraFactors& factors, std::int64_t expert)
{
    const std::int64_t experts = factors.experts();
    const torch::Tensor a = factors.loraA().reshape({experts, -1, factors.loraA().size(1)});
    const torch::Tensor b = factors.loraB().reshape({factors.loraB().size(0), -1, experts});
    return torch::matmul(b.select(2, expert), a[expert]) * factors.scaling();
}

// The model's projection `name` ("model.layers.0.mlp.experts.1.up_proj")
// as a dense weight.
torch::Tensor& denseWeight(LlamaForCausalLm& model, const std::string& name)
{
    for (auto& [projection, layer] : model.projections())
        if (projection == name)
            return std::dynamic_pointer_cast<DenseLinear>(layer)->weight();
    qFatal("no projection %s", name.c_str());
}

// Folds peft's deltas into a copy's expert weights: its output is what peft
// computes with the adapter.
void foldExpertDeltas(LlamaForCausalLm& adapted, LlamaForCausalLm& plain)
{
    torch::NoGradGuard noGrad;
    const bool mixtral = adapted.config().modelType == "mixtral";
    const std::string block = mixtral ? ".block_sparse_moe.experts." : ".mlp.experts.";
    const std::int64_t f = adapted.config().expertIntermediateSize;
    for (size_t l = 0; l < adapted.model().layers().size(); ++l) {
        SparseMoe& moe = *adapted.model().layers()[l]->experts();
        for (std::int64_t e = 0; e < moe.expertCount(); ++e) {
            const std::string expert =
                "model.layers." + std::to_string(l) + block + std::to_string(e) + ".";
            if (ExpertLoraFactors* gateUp = moe.lora(ExpertWeight::GateUp)) {
                const torch::Tensor delta = peftDelta(*gateUp, e);
                denseWeight(plain, expert + (mixtral ? "w1" : "gate_proj")) +=
                    delta.narrow(0, 0, f);
                denseWeight(plain, expert + (mixtral ? "w3" : "up_proj")) += delta.narrow(0, f, f);
            }
            if (ExpertLoraFactors* down = moe.lora(ExpertWeight::Down))
                denseWeight(plain, expert + (mixtral ? "w2" : "down_proj")) += peftDelta(*down, e);
        }
    }
}

} // namespace

class TestExpertLora : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { setComputeThreads(1); }

    void expertTargetsAreRefusedNamingTheValue_data()
    {
        QTest::addColumn<QString>("modelType");
        QTest::addColumn<std::vector<std::string>>("parameters");
        QTest::addColumn<double>("dropout");
        QTest::addColumn<QString>("expected");
        QTest::newRow("a name that selects nothing")
            << "qwen3_moe" << std::vector<std::string>{"mlp.experts.down_proj", "experts.up_proj"}
            << 0.0
            << "\"experts.up_proj\" selects no weight of this qwen3_moe model (its experts' "
               "weights are mlp.experts.gate_up_proj and mlp.experts.down_proj";
        QTest::newRow("Mixtral's checkpoint name")
            << "mixtral" << std::vector<std::string>{"block_sparse_moe.experts.w1"} << 0.0
            << "\"block_sparse_moe.experts.w1\" selects no weight of this mixtral model";
        QTest::newRow("a dense model")
            << "llama" << std::vector<std::string>{"mlp.experts.down_proj"} << 0.0
            << "a llama model has no experts to adapt (got mlp.experts.down_proj)";
        QTest::newRow("dropout") << "mixtral" << std::vector<std::string>{"mlp.experts.down_proj"}
                                 << 0.05 << "lora.dropout: got 0.05, expected 0";
    }

    void expertTargetsAreRefusedNamingTheValue()
    {
        QFETCH(QString, modelType);
        QFETCH(std::vector<std::string>, parameters);
        QFETCH(double, dropout);
        QFETCH(QString, expected);
        const LlamaConfig config = modelType == "llama" ? testutil::tinyTiedConfig()
                                                        : tinyMoeConfig(modelType.toStdString());
        auto model = createCausalLm(config, ComputeDType::Float32);
        const auto attached = attachLora(*model, expertSpec(parameters, dropout), 1);
        QVERIFY(!attached.ok());
        const QString text = QString::fromStdString(attached.error().toString());
        QVERIFY2(text.contains(expected), qPrintable(text));
    }

    void expertLoraAddsPeftsUpdatePerExpert_data()
    {
        QTest::addColumn<QString>("modelType");
        QTest::addColumn<std::vector<std::string>>("parameters");
        QTest::addColumn<int>("adaptedPerLayer");
        for (const char* type : {"mixtral", "qwen3_moe"}) {
            QTest::addRow("%s both", type)
                << type
                << std::vector<std::string>{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}
                << 2;
            QTest::addRow("%s gate_up_proj", type)
                << type << std::vector<std::string>{"gate_up_proj"} << 1;
            QTest::addRow("%s down_proj of layer 1", type)
                << type << std::vector<std::string>{"layers.1.mlp.experts.down_proj"} << 0;
        }
    }

    // Our forward with the experts' LoRA equals the model whose expert
    // weights have peft's delta folded in; A drawn as peft draws it, B zero
    // (the output unchanged until trained); rank per expert.
    void expertLoraAddsPeftsUpdatePerExpert()
    {
        QFETCH(QString, modelType);
        QFETCH(std::vector<std::string>, parameters);
        QFETCH(int, adaptedPerLayer);
        auto model = moeModel(modelType.toStdString());
        auto plain = moeModel(modelType.toStdString());
        const torch::Tensor ids = testutil::ids({1, 4, 9, 16, 25, 7, 3, 11, 2, 20});
        const torch::Tensor before = model->forward(ids).detach();
        const auto wrapped = attachLora(*model, expertSpec(parameters), 11);
        QVERIFY2(wrapped.ok(), wrapped.ok() ? "" : wrapped.error().toString().c_str());
        const std::int64_t expertWeights = adaptedPerLayer == 0 ? 1 : 2 * adaptedPerLayer;
        QCOMPARE(wrapped->size(), size_t(2 * 4 + expertWeights));
        QVERIFY(torch::equal(model->forward(ids).detach(), before));
        const std::int64_t h = 12, f = 8, experts = 4, rank = 3;
        for (auto& layer : model->model().layers()) {
            for (const ExpertWeight weight : {ExpertWeight::GateUp, ExpertWeight::Down}) {
                ExpertLoraFactors* factors = layer->experts()->lora(weight);
                if (!factors)
                    continue;
                const bool gateUp = weight == ExpertWeight::GateUp;
                const std::int64_t in = gateUp ? h : f;
                QCOMPARE(factors->loraA().sizes().vec(),
                    (std::vector<std::int64_t>{rank * experts, in}));
                QCOMPARE(factors->loraB().sizes().vec(),
                    (std::vector<std::int64_t>{gateUp ? 2 * f : h, rank * experts}));
                QVERIFY(factors->loraA().abs().max().item<double>() <= 1.0 / std::sqrt(double(in)));
                QCOMPARE(factors->scaling(), 2.0);
            }
        }
        randomizeExpertB(*model);
        foldExpertDeltas(*model, *plain);
        const double difference = testutil::maxAbsDiff(model->forward(ids), plain->forward(ids));
        QVERIFY2(difference < 1e-12, qPrintable(QString::number(difference)));
        QVERIFY(testutil::maxAbsDiff(model->forward(ids), before) > 1e-3);
    }

    void adapterCarriesPeftsNames_data()
    {
        QTest::addColumn<std::vector<std::string>>("parameters");
        QTest::addColumn<QString>("gateUpA"); // "": not adapted
        QTest::addColumn<QString>("downA");
        QTest::newRow("both: gate_up_proj nested in down_proj's wrapper")
            << std::vector<std::string>{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"}
            << "experts.base_layer.lora_A.weight"
            << "experts.lora_A.weight";
        QTest::newRow("gate_up_proj alone")
            << std::vector<std::string>{"mlp.experts.gate_up_proj"} << "experts.lora_A.weight"
            << "";
        QTest::newRow("down_proj alone") << std::vector<std::string>{"mlp.experts.down_proj"} << ""
                                         << "experts.lora_A.weight";
    }

    // Mixtral's experts under transformers' module path (mlp, not the
    // checkpoint's block_sparse_moe), the config's target_parameters as given;
    // read back into a fresh model: the same logits.
    void adapterCarriesPeftsNames()
    {
        QFETCH(std::vector<std::string>, parameters);
        QFETCH(QString, gateUpA);
        QFETCH(QString, downA);
        QTemporaryDir dir;
        // fp32, as the adapter file stores it, so the round trip is exact.
        auto model = moeModel("mixtral", ComputeDType::Float32);
        QVERIFY(attachLora(*model, expertSpec(parameters), 11).ok());
        randomizeExpertB(*model);
        const torch::Tensor ids = testutil::ids({1, 4, 9, 16, 25, 7});
        const torch::Tensor expected = model->forward(ids).detach();
        const std::string adapter = dir.filePath("adapter").toStdString();
        QVERIFY(savePeftAdapter(*model, expertSpec(parameters), adapter, "/models/tiny").ok());
        auto file = safetensors::SafetensorsFile::open(adapter + "/adapter_model.safetensors");
        QVERIFY(file.ok());
        const std::string layer = "base_model.model.model.layers.1.mlp.";
        const std::int64_t h = 12, f = 8, rank12 = 12;
        if (!gateUpA.isEmpty()) {
            const auto* a = file->find(layer + gateUpA.toStdString());
            QVERIFY2(a, qPrintable(gateUpA));
            QCOMPARE(a->shape, (std::vector<std::int64_t>{rank12, h}));
        }
        if (!downA.isEmpty()) {
            const auto* a = file->find(layer + downA.toStdString());
            QVERIFY2(a, qPrintable(downA));
            QCOMPARE(a->shape, (std::vector<std::int64_t>{rank12, f}));
        }
        const auto config =
            nlohmann::json::parse(*common::readFile(adapter + "/adapter_config.json"));
        QCOMPARE(config.at("target_parameters").get<std::vector<std::string>>(), parameters);
        QCOMPARE(config.at("lora_dropout").get<double>(), 0.0);

        const auto read = readPeftAdapterConfig(adapter);
        QVERIFY(read.ok());
        QCOMPARE(read->targetParameters, parameters);
        auto fresh = moeModel("mixtral", ComputeDType::Float32);
        QVERIFY(attachLora(*fresh, *read, 999).ok());
        const auto loaded = loadPeftAdapter(*fresh, adapter);
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
        QVERIFY(torch::equal(fresh->forward(ids).detach(), expected));
    }

    // QLoRA quantises every expert's projections to NF4 (the router stays
    // dense) and trains the experts' LoRA over them; the trainable count is
    // attention's LoRA and r x experts x (in + out) per adapted weight.
    void qloraTrainsExpertLoraOverNf4Experts()
    {
        TrainingSession session;
        session.config.method = config::Method::Qlora;
        session.config.lora.rank = 3;
        session.config.lora.alpha = 6.0;
        session.config.lora.dropout = 0.0;
        session.config.lora.targetModules = {"q_proj"};
        session.config.lora.targetParameters = {
            "mlp.experts.gate_up_proj", "mlp.experts.down_proj"};
        auto base = createCausalLm(tinyMoeConfig("qwen3_moe"), ComputeDType::Float32);
        base->initializeRandom(3);
        const auto prepared = prepareTrainableModel(session, base);
        QVERIFY2(prepared.ok(), prepared.ok() ? "" : prepared.error().toString().c_str());
        LlamaForCausalLm& model = *session.model;
        for (auto& [name, layer] : model.projections())
            if (LlamaForCausalLm::isExpertProjection(name))
                QVERIFY2(std::dynamic_pointer_cast<Nf4Linear>(layer), name.c_str());
        const std::int64_t h = 12, f = 8, experts = 4, rank = 3, q = 4 * 6;
        const std::int64_t perLayer =
            rank * (h + q) + rank * experts * (h + 2 * f) + rank * experts * (f + h);
        QCOMPARE(session.trainableParameters, 2 * perLayer);

        const torch::Tensor ids = testutil::ids({1, 4, 9, 16, 25, 7, 3, 11});
        model.forward(ids).pow(2).mean().backward();
        // B starts at zero, so only B's gradient is non-zero after one backward.
        for (auto& item : model.named_parameters()) {
            if (!isExpertLoraParameter(item.key()))
                continue;
            QVERIFY2(item.value().requires_grad(), item.key().c_str());
            QVERIFY2(item.value().grad().defined(), item.key().c_str());
            if (item.key().find(".lora_B.") != std::string::npos)
                QVERIFY2(item.value().grad().abs().sum().item<double>() > 0, item.key().c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestExpertLora)
#include "test_expert_lora.moc"
