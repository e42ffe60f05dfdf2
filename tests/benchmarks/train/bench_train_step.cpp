// Training throughput and memory of a ~15M-parameter Llama (the stories15M
// shape of llama2.c, random weights) on this CPU, against two references
// measured in the same run:
//  - speed: the CPU's own matrix-multiply rate (a 1024^3 matmul in the
//    compute dtype, timed alternately with the steps so both see the same
//    load). The ratio is the share of what this machine's BLAS can do that a
//    whole training step achieves.
//  - memory: the planner's per-GPU prediction (tb::plan::estimatePlan) for
//    the same model, method, precision, batch and sequence, against the
//    growth of this process's resident memory (VmHWM minus the RSS before
//    the model existed). Each case runs in a child process so that each
//    peak is its own.
//
//   bench_train_step [threads] [batch] [tokens] [steps]
//
// Model FLOPs per token, forward: 2 N_matmul + 4 L d T (PaLM appendix B:
// every weight used in a matmul, the tied output projection included, plus
// Q K^T and P V). A full fine-tune step is 3 forwards (backward = 2); LoRA
// skips the frozen weights' gradients: 2 forwards (LIBTORCH.md). Activation
// checkpointing adds one forward of hardware work, not of model FLOPs.
// Memory is also split by phase (setup, forward + backward, update) with
// VmHWM restarted between phases (resetPeakResidentMemory).

#include "../../support/test_paths.h"
#include "common/atomic_file.h"
#include "data/batch.h"
#include "llama_bench_util.h"
#include "plan/catalog.h"
#include "plan/estimator.h"
#include "train/llama_model.h"
#include "train/model_loader.h"
#include "train/process_memory.h"
#include "train/train_step.h"
#include "train/training_session.h"

#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace tb;
using namespace tb::train;

namespace {

using tb::bench::forwardFlopsPerToken;
using tb::bench::median;
using tb::bench::stories15mShape;
using tb::bench::timed;

std::string configJson(const LlamaConfig& c)
{
    char text[1024];
    std::snprintf(text, sizeof text,
        R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","vocab_size":%lld,)"
        R"("hidden_size":%lld,"intermediate_size":%lld,"num_hidden_layers":%lld,)"
        R"("num_attention_heads":%lld,"num_key_value_heads":%lld,"head_dim":%lld,)"
        R"("max_position_embeddings":%lld,"rms_norm_eps":1e-05,"rope_theta":10000.0,)"
        R"("tie_word_embeddings":true,"hidden_act":"silu","torch_dtype":"float32"})",
        (long long)c.vocabSize, (long long)c.hiddenSize, (long long)c.intermediateSize,
        (long long)c.numLayers, (long long)c.numHeads, (long long)c.numKvHeads,
        (long long)c.headDim, (long long)c.maxPositionEmbeddings);
    return text;
}

struct Case {
    const char* name;
    config::Method method;
    config::Precision precision;
    bool checkpointing;
};

const Case kCases[] = {
    {"full fp32", config::Method::Full, config::Precision::Fp32, false},
    {"full fp32 +ckpt", config::Method::Full, config::Precision::Fp32, true},
    {"full bf16-mixed", config::Method::Full, config::Precision::Bf16Mixed, false},
    {"lora r16 fp32", config::Method::Lora, config::Precision::Fp32, false},
    {"lora r16 bf16-mix", config::Method::Lora, config::Precision::Bf16Mixed, true},
};

struct Settings {
    int threads = 0;
    std::int64_t batch = 4;
    std::int64_t tokens = 256;
    int steps = 5;
};

// The planner's prediction for the case, per GPU: model states (weights,
// gradients, optimizer), activations (with attention scores and logits),
// and the total with and without its GPU-only overhead.
struct PlannerBytes {
    double states = -1;
    double activations = -1;
    double withoutGpuOverhead = -1;
    double total = -1;
};

PlannerBytes plannerBytes(const Case& c, const Settings& s, const std::string& configPath)
{
    auto catalog = plan::Catalog::load(tb::test::sourcePath("presets"));
    if (!catalog) {
        std::fprintf(stderr, "planner: %s\n", catalog.error().toString().c_str());
        return {};
    }
    plan::PlanInput input;
    input.model = configPath;
    input.method = c.method == config::Method::Full ? plan::Method::Full : plan::Method::Lora;
    input.precision = c.precision == config::Precision::Fp32 ? plan::Precision::Fp32
        : c.precision == config::Precision::Bf16             ? plan::Precision::Bf16
                                                             : plan::Precision::Bf16Mixed;
    input.lora.rank = 16;
    input.lora.alpha = 32;
    input.lora.dropout = 0.0;
    input.gradientCheckpointing = c.checkpointing;
    // LibTorch 1.13's CPU attention is the math kernel: it stores the scores.
    input.attention = plan::Attention::Eager;
    input.loss = plan::LossMode::Fused; // our chunked loss never holds the whole logits
    input.microBatch = static_cast<int>(s.batch);
    input.seqLen = static_cast<int>(s.tokens);
    input.gradAccum = 1;
    input.vmSize = "";
    input.gpu = "A100-80GB-SXM";
    input.cudaContextGiB = 0.001;
    auto spec = catalog->resolveModel(configPath);
    const plan::GpuSpec* gpu = catalog->findGpu(input.gpu);
    if (!spec || !gpu) {
        std::fprintf(stderr, "planner: %s\n",
            !spec ? spec.error().toString().c_str() : "no GPU A100-80GB-SXM in the catalog");
        return {};
    }
    const plan::PlanResult result = plan::estimatePlan(input, *spec, *gpu, nullptr, {false});
    PlannerBytes out;
    out.total = result.perGpuBytes;
    out.states = result.categoryBytes(plan::MemoryCategory::Weights)
        + result.categoryBytes(plan::MemoryCategory::Gradients)
        + result.categoryBytes(plan::MemoryCategory::Optimizer);
    out.activations = result.categoryBytes(plan::MemoryCategory::Activations)
        + result.categoryBytes(plan::MemoryCategory::Logits);
    out.withoutGpuOverhead = out.total - result.categoryBytes(plan::MemoryCategory::Overhead);
    return out;
}

int runCase(const Case& c, const Settings& s, const std::string& configPath)
{
    setComputeThreads(s.threads);
    torch::ones({8}).sum(); // LibTorch initialised before the baseline
    const ProcessMemory before = processMemory();

    const LlamaConfig shape = stories15mShape();
    TrainingSession session;
    session.config.method = c.method;
    session.config.precision = c.precision;
    session.config.activationCheckpointing = c.checkpointing;
    session.config.lora.rank = 16;
    session.config.lora.alpha = 32;
    session.config.lora.dropout = 0.0;
    {
        auto base = createCausalLm(shape, ComputeDType::Float32);
        base->initializeRandom(1);
        if (auto status = prepareTrainableModel(session, base); !status) {
            std::fprintf(stderr, "%s\n", status.error().toString().c_str());
            return 1;
        }
    }
    // Fixed-length rows of random ids, every token trained.
    std::vector<data::TokenizedExample> rows(static_cast<size_t>(s.batch));
    torch::manual_seed(3);
    for (auto& row : rows) {
        const torch::Tensor ids = torch::randint(shape.vocabSize, {s.tokens}, torch::kInt);
        row.inputIds.assign(ids.data_ptr<int>(), ids.data_ptr<int>() + s.tokens);
        row.labels = row.inputIds;
    }
    std::vector<size_t> all(rows.size());
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = i;
    const data::Batch batch = data::collate(rows, all, {rows.size(), 0, 0});

    // Memory by phase: what setup leaves resident (the model states), the
    // transient peak of a forward + backward above it, and of the update.
    const ProcessMemory setup = processMemory();
    resetPeakResidentMemory();
    (void)accumulateStepGradients(*session.model, *session.parameters, {batch});
    const ProcessMemory backward = processMemory();
    resetPeakResidentMemory();
    session.parameters->clipGradientNorm(1.0);
    session.optimizer->step(1e-4);
    session.parameters->copyMasterToModel();
    session.parameters->zeroGradients();
    const ProcessMemory update = processMemory();
    resetPeakResidentMemory(); // from here on, the peak of whole steps

    const auto type = c.precision == config::Precision::Fp32 ? torch::kFloat : torch::kBFloat16;
    const std::int64_t n = 1024;
    const torch::Tensor a = torch::randn({n, n}).to(type);
    const torch::Tensor b = torch::randn({n, n}).to(type);
    torch::matmul(a, b);
    std::vector<double> stepTimes, matmulTimes;
    for (int i = 0; i < s.steps; ++i) {
        stepTimes.push_back(timed([&] {
            (void)trainStep(
                *session.model, *session.parameters, *session.optimizer, {batch}, 1e-4, 1.0);
        }));
        matmulTimes.push_back(timed([&] { torch::matmul(a, b); }));
    }
    const ProcessMemory after = processMemory();
    const double tokensPerStep = double(s.batch * s.tokens);
    const double tokensPerSecond = tokensPerStep / median(stepTimes);
    const double forward = forwardFlopsPerToken(shape, s.tokens);
    const double modelFlops = (c.method == config::Method::Full ? 3.0 : 2.0) * forward;
    const double hardwareFlops = modelFlops + (c.checkpointing ? forward : 0.0);
    const double matmul = 2.0 * double(n * n * n) / median(matmulTimes);
    std::printf("S %-18s %8.0f %8.1f %8.1f %9.1f %6.1f%%\n", c.name, tokensPerSecond,
        tokensPerSecond * modelFlops / 1e9, tokensPerSecond * hardwareFlops / 1e9, matmul / 1e9,
        100.0 * tokensPerSecond * hardwareFlops / matmul);
    const PlannerBytes planner = plannerBytes(c, s, configPath);
    const double mib = 1048576.0;
    auto above = [&](std::int64_t bytes, std::int64_t base) { return double(bytes - base) / mib; };
    std::printf("M %-18s %7.0f %7.0f %7.0f %7.0f %7.0f %7.0f | %7.0f %7.0f %7.0f %7.0f\n", c.name,
        double(before.residentBytes) / mib, above(setup.peakResidentBytes, before.residentBytes),
        above(setup.residentBytes, before.residentBytes),
        above(backward.peakResidentBytes, setup.residentBytes),
        above(update.peakResidentBytes, backward.residentBytes),
        above(after.peakResidentBytes, before.residentBytes), planner.states / mib,
        planner.activations / mib, planner.withoutGpuOverhead / mib, planner.total / mib);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    Settings s;
    int caseIndex = -1;
    std::string configPath;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--case") == 0 && i + 1 < argc)
            caseIndex = std::atoi(argv[++i]);
        else if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            configPath = argv[++i];
        else
            positional.emplace_back(argv[i]);
    }
    s.threads = positional.size() > 0 ? std::atoi(positional[0].c_str())
                                      : int(std::max(1u, std::thread::hardware_concurrency()));
    if (positional.size() > 1)
        s.batch = std::atoll(positional[1].c_str());
    if (positional.size() > 2)
        s.tokens = std::atoll(positional[2].c_str());
    if (positional.size() > 3)
        s.steps = std::max(1, std::atoi(positional[3].c_str()));

    if (caseIndex >= 0)
        return runCase(kCases[caseIndex], s, configPath);
    // The planner reads the model from a config.json, as a user would give it.
    const std::string dir = std::filesystem::temp_directory_path().string() + "/bench_train_step_"
        + std::to_string(::getpid());
    configPath = dir + "/config.json";

    std::filesystem::create_directories(dir);
    if (common::Status written = common::writeFileAtomic(configPath, configJson(stories15mShape()));
        !written) {
        std::fprintf(stderr, "bench_train_step: %s\n", written.error().toString().c_str());
        return 1;
    }
    std::printf("LibTorch %s, %d threads; stories15M shape (%.2f M parameters), random weights; "
                "batch %lld x %lld tokens, median of %d steps\n",
        TORCH_VERSION, s.threads, double(stories15mShape().parameterCount()) / 1e6,
        (long long)s.batch, (long long)s.tokens, s.steps);
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    std::vector<std::string> speed, memory;
    for (size_t i = 0; i < std::size(kCases); ++i) {
        const std::string command = "'" + self + "' --config '" + configPath + "' --case "
            + std::to_string(i) + " " + std::to_string(s.threads) + " " + std::to_string(s.batch)
            + " " + std::to_string(s.tokens) + " " + std::to_string(s.steps);
        FILE* child = ::popen(command.c_str(), "r");
        char line[512];
        bool any = false;
        while (child && std::fgets(line, sizeof line, child)) {
            (line[0] == 'S' ? speed : memory).push_back(line + 2);
            any = true;
        }
        if (!child || ::pclose(child) != 0 || !any)
            speed.push_back(std::string(kCases[i].name) + " failed\n");
    }
    std::printf("\nSpeed. model GF: GFLOP/s counting 6N (full) or 4N (LoRA) plus attention "
                "per token; hw GF adds\nthe recompute of checkpointing; ratio: hw GF over the "
                "matmul rate measured alongside.\n\n");
    std::printf("%-18s %8s %8s %8s %9s %7s\n", "case", "tokens/s", "model GF", "hw GF", "matmul GF",
        "ratio");
    for (const std::string& line : speed)
        std::printf("%s", line.c_str());
    std::printf("\nMemory, MiB. base: RSS before the model; setup^ and setup: setup's peak and "
                "what it leaves\nresident, above base; fwd+bwd: transient peak of a forward "
                "and backward above that; update: of\nclip + AdamW; steps: peak of whole steps "
                "above base. Planner, per GPU: model states,\nactivations + logits, total "
                "without and with its GPU-only overhead (CUDA context, slack).\n\n");
    std::printf("%-18s %7s %7s %7s %7s %7s %7s | %7s %7s %7s %7s\n", "case", "base", "setup^",
        "setup", "fwd+bwd", "update", "steps", "states", "activ.", "total", "+gpu");
    for (const std::string& line : memory)
        std::printf("%s", line.c_str());
    std::filesystem::remove_all(dir);
    return 0;
}
