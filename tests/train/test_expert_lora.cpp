#include "../support/test_paths.h"
#include "common/atomic_file.h"
#include "common/text.h"
#include "plan/catalog.h"
#include "plan/estimator.h"
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

Q_DECLARE_METATYPE(std::vector<std::string>)

namespace {

const std::vector<std::string> kAttention = {"q_proj", "k_proj", "v_proj", "o_proj"};

LlamaConfig tinyMoeConfig(const std::string& modelType)
{
    LlamaConfig config = testutil::tinyTiedConfig();
    config.modelType = modelType;
    config.ropeScaling = {};
    config.experts = 4;
    config.expertsPerToken = 2;
    config.expertIntermediateSize = 8;
    config.normTopkProb = modelType == "mixtral";
    return config;
}

LoraSpec expertSpec(std::vector<std::string> parameters, double dropout = 0.0)
{
    LoraSpec spec;
    spec.rank = 3;
    spec.alpha = 6.0;
    spec.dropout = dropout;
    spec.targetModules = kAttention;
    spec.targetParameters = std::move(parameters);
    return spec;
}

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

// LoRA parameters the trainer builds over the model of `folder`.
std::int64_t trainerLoraParameters(const std::string& folder, const LoraSpec& spec)
{
    const auto config = loadLlamaConfig(folder);
    if (!config)
        qFatal("%s", config.error().toString().c_str());
    auto model = createCausalLm(*config, ComputeDType::Float32);
    if (const auto attached = attachLora(*model, spec, 1); !attached)
        qFatal("%s", attached.error().toString().c_str());
    std::int64_t count = 0;
    for (const auto& item : model->named_parameters())
        if (item.key().find(".lora_") != std::string::npos)
            count += item.value().numel();
    return count;
}

// Bytes the CPU allocator hands out and takes back while it is alive, told
// by c10's memory reporting (what PyTorch's profiler reads with
// profile_memory): what is still held at the end was allocated meanwhile
// and not freed.
class AllocatorWatch : public c10::MemoryReportingInfoBase {
public:
    void reportMemoryUsage(void*, std::int64_t bytes, size_t, size_t, c10::Device device) override
    {
        if (device.is_cpu())
            m_held += bytes;
    }
    bool memoryProfilingEnabled() const override { return true; }
    std::int64_t held() const { return m_held; }

private:
    std::int64_t m_held = 0;
};

// What one forward of the trainer's LoRA model keeps for backward: the
// bytes allocated in the forward and still held with its output, the
// output's own left out. Rope tables and the like are made by a first
// forward without gradient, before the one measured.
std::int64_t savedForBackward(
    const std::string& folder, const LoraSpec& spec, const torch::Tensor& ids)
{
    const auto config = loadLlamaConfig(folder);
    if (!config)
        qFatal("%s", config.error().toString().c_str());
    auto model = createCausalLm(*config, ComputeDType::Float32);
    model->initializeRandom(5);
    if (const auto attached = attachLora(*model, spec, 1); !attached)
        qFatal("%s", attached.error().toString().c_str());
    freezeAllButLora(*model);
    {
        torch::NoGradGuard noGrad;
        model->forward(ids);
    }
    auto watch = std::make_shared<AllocatorWatch>();
    const c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, watch);
    const torch::Tensor logits = model->forward(ids);
    return watch->held() - std::int64_t(logits.nbytes());
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

    void plannerCountsWhatTheTrainerBuilds_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<std::vector<std::string>>("parameters");
        const QString mixtral = R"({"model_type":"mixtral","architectures":["MixtralForCausalLM"],
            "hidden_size":64,"intermediate_size":96,"num_hidden_layers":3,"num_attention_heads":4,
            "num_key_value_heads":2,"num_local_experts":4,"num_experts_per_tok":2,
            "vocab_size":128,"sliding_window":null})";
        const QString qwen = R"({"model_type":"qwen3_moe","hidden_size":64,"intermediate_size":96,
            "moe_intermediate_size":24,"num_hidden_layers":3,"num_attention_heads":4,
            "num_key_value_heads":2,"head_dim":16,"num_experts":6,"num_experts_per_tok":3,
            "vocab_size":128,"tie_word_embeddings":true})";
        const std::vector<std::string> both = {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"};
        QTest::newRow("mixtral, attention only") << mixtral << std::vector<std::string>{};
        QTest::newRow("mixtral, both expert weights") << mixtral << both;
        QTest::newRow("qwen3_moe, both expert weights") << qwen << both;
        QTest::newRow("qwen3_moe, down_proj of one layer")
            << qwen << std::vector<std::string>{"layers.2.mlp.experts.down_proj"};
        QTest::newRow("qwen3_moe, gate_up_proj")
            << qwen << std::vector<std::string>{"gate_up_proj"};
    }

    // The plan's trainable parameters (whose gradients and optimizer states
    // it counts) are the LoRA matrices the trainer builds, experts included.
    void plannerCountsWhatTheTrainerBuilds()
    {
        QFETCH(QString, json);
        QFETCH(std::vector<std::string>, parameters);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(common::writeFileAtomic(folder + "/config.json", json.toStdString()).ok());
        const auto catalog = plan::Catalog::load(tb::test::sourcePath("presets"));
        QVERIFY2(catalog.ok(), catalog.ok() ? "" : catalog.error().toString().c_str());
        const auto model = catalog->resolveModel(folder);
        QVERIFY2(model.ok(), model.ok() ? "" : model.error().toString().c_str());
        const plan::GpuSpec* gpu = catalog->findGpu("A100-80GB-SXM");
        QVERIFY(gpu);
        plan::PlanInput in;
        in.method = plan::Method::Lora;
        in.lora.rank = 3;
        in.lora.dropout = 0.0;
        in.lora.targetModules = kAttention;
        in.lora.targetParameters = parameters;
        QVERIFY(plan::validateForModel(in, *model).ok());
        const plan::PlanResult planned = plan::estimatePlan(in, *model, *gpu);
        QCOMPARE(planned.paramsTrainable, trainerLoraParameters(folder, expertSpec(parameters)));
    }

    // The activations the plan adds for LoRA on the experts are what the
    // trainer's forward keeps for them: each adapted weight's input rows
    // (gathered per expert for gate_up_proj, the product for down_proj)
    // and A's rank-wide output, k rows a token (docs/PLANNER.md 4.3).
    void plannedActivationsFollowTheTrainer_data()
    {
        QTest::addColumn<QString>("modelType");
        QTest::addColumn<std::vector<std::string>>("parameters");
        QTest::addColumn<int>("tokens");
        const std::vector<std::string> both = {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"};
        for (const char* type : {"mixtral", "qwen3_moe"}) {
            QTest::addRow("%s, gate_up_proj", type)
                << type << std::vector<std::string>{"gate_up_proj"} << 8;
            QTest::addRow("%s, down_proj", type)
                << type << std::vector<std::string>{"mlp.experts.down_proj"} << 8;
            QTest::addRow("%s, both, 13 tokens", type) << type << both << 13;
        }
    }
    void plannedActivationsFollowTheTrainer()
    {
        QFETCH(QString, modelType);
        QFETCH(std::vector<std::string>, parameters);
        QFETCH(int, tokens);
        const QString json = QStringLiteral(
            R"({"model_type":"%1","hidden_size":64,"intermediate_size":40,
            "moe_intermediate_size":24,"num_hidden_layers":3,"num_attention_heads":4,
            "num_key_value_heads":2,"head_dim":16,"num_local_experts":4,"num_experts":4,
            "num_experts_per_tok":2,"vocab_size":128,"sliding_window":null})")
                                 .arg(modelType);
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QVERIFY(common::writeFileAtomic(folder + "/config.json", json.toStdString()).ok());
        std::vector<std::int64_t> values;
        for (int i = 0; i < tokens; ++i)
            values.push_back((i * 37 + 11) % 128);
        const torch::Tensor ids = testutil::ids(values);
        const std::int64_t measured = savedForBackward(folder, expertSpec(parameters), ids)
            - savedForBackward(folder, expertSpec({}), ids);

        const auto catalog = plan::Catalog::load(tb::test::sourcePath("presets"));
        QVERIFY(catalog.ok());
        const auto model = catalog->resolveModel(folder);
        QVERIFY2(model.ok(), model.ok() ? "" : model.error().toString().c_str());
        const plan::GpuSpec* gpu = catalog->findGpu("A100-80GB-SXM");
        QVERIFY(gpu);
        const auto activations = [&](const std::vector<std::string>& targets) {
            plan::PlanInput in;
            in.method = plan::Method::Lora;
            in.precision = plan::Precision::Fp32;
            in.gradientCheckpointing = false;
            in.microBatch = 1;
            in.seqLen = tokens;
            in.lora.rank = 3;
            in.lora.dropout = 0.0;
            in.lora.targetModules = kAttention;
            in.lora.targetParameters = targets;
            return plan::estimatePlan(in, *model, *gpu).component("activations")->bytes;
        };
        const double planned = activations(parameters) - activations({});
        qInfo("expert LoRA keeps %lld bytes for backward, planned %.0f",
            static_cast<long long>(measured), planned);
        QVERIFY(measured > 0);
        QCOMPARE(double(measured), planned);
    }

    void plannerRefusesExpertTargetsThatSelectNothing()
    {
        const auto catalog = plan::Catalog::load(tb::test::sourcePath("presets"));
        QVERIFY(catalog.ok());
        plan::PlanInput in;
        in.lora.targetParameters = {"mlp.experts.up_proj"};
        const auto moe = catalog->resolveModel("Mixtral-8x7B-v0.1");
        QVERIFY2(moe.ok(), moe.ok() ? "" : moe.error().toString().c_str());
        const auto refused = plan::validateForModel(in, *moe);
        QVERIFY(!refused.ok());
        QVERIFY2(refused.error().toString().find("'mlp.experts.up_proj' selects no expert weight")
                != std::string::npos,
            refused.error().toString().c_str());
        QVERIFY(refused.error().toString().find("mlp.experts.gate_up_proj") != std::string::npos);
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
