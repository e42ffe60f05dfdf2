#include "../support/test_paths.h"
#include "common/atomic_file.h"
#include "common/text.h"
#include "expert_lora_fixture.h"
#include "plan/catalog.h"
#include "plan/estimator.h"
#include "train/expert_lora.h"
#include "train/lora.h"
#include "train/model_config.h"
#include "train/model_loader.h"
#include "train/training_session.h"
#include "train_test_util.h"

#include <QTemporaryDir>
#include <QTest>

// The planner against what the trainer builds and keeps for LoRA on a
// mixture of experts' weights: the trainable parameters it counts, the
// activations it plans (held against the bytes a forward keeps for
// backward, told by c10's allocator reports), and the targets it refuses.
using namespace tb;
using namespace tb::train;
using tb::test::expertSpec;
using tb::test::kAttention;
using tb::test::tinyMoeConfig;

Q_DECLARE_METATYPE(std::vector<std::string>)

namespace {

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

class TestExpertLoraPlan : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { setComputeThreads(1); }

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
};

QTEST_GUILESS_MAIN(TestExpertLoraPlan)
#include "test_expert_lora_plan.moc"
