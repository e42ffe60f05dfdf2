#include "plan_fixture.h"

#include "common/atomic_file.h"
#include "plan/plan_file.h"

#include "../support/text_mutator.h"

#include <random>

using namespace tb;

// Seeded mutations of valid plan YAML, DeepSpeed JSON and accelerate YAML:
// every mutant must give a value or an Error naming the file, never a crash,
// hang or exception; accepted plans must estimate to finite numbers.
// TB_FUZZ_ITERATIONS raises the count for long runs.
namespace {

std::string mutate(const std::string& seed, std::mt19937_64& rng)
{
    static const testutil::MutationOptions kOptions{.maxEdits = 6, .maxErase = 6, .maxSpan = 30};
    return testutil::mutateText(seed, rng, kOptions);
}

int iterations()
{
    return testutil::fuzzIterations(4000);
}

void checkEstimate(const plan::PlanInput& in)
{
    const auto r = plan::planFromCatalog(in, presetCatalog(), plan::EstimateOptions{false});
    if (!r.ok())
        return; // unknown model or VM after mutation: an Error is the right answer
    QVERIFY(std::isfinite(r->perGpuBytes) && r->perGpuBytes > 0);
    QVERIFY(std::isfinite(r->tokensPerSecond));
}

} // namespace

class TestPlanFuzz : public QObject {
    Q_OBJECT

private slots:
    void planYaml()
    {
        plan::PlanInput seedInput;
        seedInput.method = plan::Method::Qlora;
        seedInput.lora.targetModules = {"q_proj", "v_proj"};
        const std::string seed = plan::planToYaml(seedInput);
        std::mt19937_64 rng(1);
        int accepted = 0;
        for (int i = 0; i < iterations(); ++i) {
            const auto in = plan::parsePlanYaml(mutate(seed, rng), "fuzz.yaml");
            if (in.ok()) {
                ++accepted;
                checkEstimate(*in);
            } else {
                QVERIFY(QString::fromStdString(in.error().message).contains("fuzz.yaml"));
            }
        }
        qInfo("plan YAML reader: %d mutated inputs, %d accepted", iterations(), accepted);
    }

    void deepSpeedJson()
    {
        const std::string seed =
            R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 8,
            "bf16": {"enabled": true}, "fp16": {"enabled": false}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}},
            "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"},
            "reduce_bucket_size": "auto"}})";
        std::mt19937_64 rng(2);
        int accepted = 0;
        for (int i = 0; i < iterations(); ++i) {
            const auto in =
                plan::parseDeepSpeedJson(mutate(seed, rng), "fuzz.json", plan::PlanInput{});
            if (in.ok()) {
                ++accepted;
                checkEstimate(in->input);
            } else {
                QVERIFY(QString::fromStdString(in.error().message).contains("fuzz.json"));
            }
        }
        qInfo("DeepSpeed JSON reader: %d mutated inputs, %d accepted", iterations(), accepted);
    }

    void accelerateYaml()
    {
        const std::string seed =
            "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nfsdp_config:\n"
            "  fsdp_sharding_strategy: HYBRID_SHARD\n  fsdp_offload_params: true\n"
            "  fsdp_activation_checkpointing: true\nmixed_precision: bf16\nnum_machines: 2\n"
            "num_processes: 16\ndeepspeed_config:\n  zero_stage: 2\n";
        std::mt19937_64 rng(3);
        int accepted = 0;
        plan::PlanInput base;
        base.vmSize = "Standard_ND96isr_H100_v5";
        base.gpusPerNode = 0;
        for (int i = 0; i < iterations(); ++i) {
            const auto in = plan::parseAccelerateYaml(mutate(seed, rng), "fuzz.yaml", base);
            if (in.ok()) {
                ++accepted;
                checkEstimate(in->input);
            } else {
                QVERIFY(QString::fromStdString(in.error().message).contains("fuzz.yaml"));
            }
        }
        qInfo("accelerate YAML reader: %d mutated inputs, %d accepted", iterations(), accepted);
    }
};

QTEST_GUILESS_MAIN(TestPlanFuzz)
#include "test_plan_fuzz.moc"
