// The planner's side of bench_data_parallel.sh, and the table it prints.
//
// The planner (tb::plan::estimatePlan) exposes per-GPU model-state bytes
// (PlanResult::memory, modelStatesBytes) but not the communication volume:
// throughput_model.cpp turns bytes into seconds (comm_seconds, with link
// rates and per-collective latency) without keeping the bytes. The bytes per
// GPU per optimizer step are recomputed here from docs/PLANNER.md section
// 5.3 with the planner's own parameter counts and dtypes (fp32: 4-byte
// gradients and weights; otherwise 16-bit, DDP's LoRA gradients in fp32):
//
//   r = (W-1)/W, G = trainable x gradient bytes, P = all parameters x
//   activation bytes, k = gradient accumulation
//   ddp                    2 r G
//   zero1                  r G + r T a          (reduce-scatter + all-gather of weights)
//   zero2                  k r G + r T a
//   zero3, fsdp-full       k r (2P + G)
//   fsdp-grad-op           k r (P + G)
//   fsdp-hybrid (1 node)   k r (2P + G)         (FULL_SHARD inside the node)
//
//   planner_comm_reference plan MODEL SHARDING WORLD MICRO_BATCH SEQ_LEN [GRAD_ACCUM]
//       one line of key=value: the planner's per-GPU figures for a full
//       fp32 AdamW fine-tune on one node of WORLD GPUs
//   planner_comm_reference table ROOT MODEL MICRO_BATCH SEQ_LEN SKIP
//       reads ROOT/w<W>-<sharding>/events*.jsonl of the runs the script made
//       and prints the comparison table (medians over the steps after SKIP)

#include "../../support/test_paths.h"
#include "plan/catalog.h"
#include "plan/estimator.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace plan = tb::plan;
using nlohmann::json;

struct PlannerFigures {
    double weights = 0; // Weights category (incl. a sharded master, if any)
    double gradients = 0;
    double optimizer = 0;
    double gather = 0; // ZeRO-3's gathered-layer buffer (part of DeepSpeed's model states)
    double modelStates = 0; // PlanResult::modelStatesBytes
    // FSDP's gathered units (root, current and prefetched layer, one layer's
    // gradients): a Buffers component the planner keeps out of its model
    // states, while the trainer counts them as parameters and gradients.
    double fsdpGathered = 0;
    double commBytes = 0; // per GPU per optimizer step, ring-counted
    std::int64_t paramsTotal = 0;
};

std::optional<PlannerFigures> plannerFigures(const std::string& model,
    const std::string& shardingName, int world, int microBatch, int seqLen, int gradAccum)
{
    const std::optional<plan::Sharding> sharding = plan::parseSharding(shardingName);
    if (!sharding) {
        std::fprintf(stderr, "planner_comm_reference: unknown sharding %s\n", shardingName.c_str());
        return std::nullopt;
    }
    auto catalog = plan::Catalog::load(tb::test::sourcePath("presets"));
    if (!catalog) {
        std::fprintf(stderr, "planner_comm_reference: %s\n", catalog.error().toString().c_str());
        return std::nullopt;
    }
    auto spec = catalog->resolveModel(model);
    if (!spec) {
        std::fprintf(stderr, "planner_comm_reference: %s\n", spec.error().toString().c_str());
        return std::nullopt;
    }
    const plan::GpuSpec* gpu = catalog->findGpu("A100-80GB-SXM");
    if (!gpu) {
        std::fprintf(stderr, "planner_comm_reference: no GPU A100-80GB-SXM in the catalog\n");
        return std::nullopt;
    }
    plan::PlanInput input;
    input.model = model;
    input.method = plan::Method::Full;
    input.precision = plan::Precision::Fp32;
    input.optimizer = plan::Optimizer::AdamW;
    input.sharding = *sharding;
    input.microBatch = microBatch;
    input.seqLen = seqLen;
    input.gradAccum = gradAccum;
    input.vmSize = "";
    input.gpu = gpu->id;
    input.gpusPerNode = world;
    input.nodes = 1;
    const plan::PlanResult result = plan::estimatePlan(input, *spec, *gpu, nullptr, {false});

    PlannerFigures out;
    out.weights = result.categoryBytes(plan::MemoryCategory::Weights);
    out.gradients = result.categoryBytes(plan::MemoryCategory::Gradients);
    out.optimizer = result.categoryBytes(plan::MemoryCategory::Optimizer);
    if (const plan::MemoryComponent* c = result.component("gather_buffers");
        c && *sharding == plan::Sharding::Zero3)
        out.gather = c->bytes;
    if (const plan::MemoryComponent* c = result.component("gather_buffers");
        c && plan::isFsdp(*sharding))
        out.fsdpGathered = c->bytes;
    out.modelStates = result.modelStatesBytes;
    out.paramsTotal = result.paramsTotal;

    // docs/PLANNER.md 5.3, fp32 full fine-tune: gradients and weights 4 bytes.
    const double W = world;
    const double r = world > 1 ? (W - 1) / W : 0;
    const double a = 4; // fp32 activation / communication dtype
    const double T = static_cast<double>(result.paramsTrainable);
    const double G = T * 4;
    const double P = static_cast<double>(result.paramsTotal) * a;
    const double k = gradAccum;
    switch (*sharding) {
    case plan::Sharding::Ddp:
        out.commBytes = 2 * r * G;
        break;
    case plan::Sharding::Zero1:
        out.commBytes = r * G + r * T * a;
        break;
    case plan::Sharding::Zero2:
        out.commBytes = k * r * G + r * T * a;
        break;
    case plan::Sharding::Zero3:
    case plan::Sharding::FsdpFull:
    case plan::Sharding::FsdpHybrid: // one node: FULL_SHARD inside it
        out.commBytes = k * r * (2 * P + G);
        break;
    case plan::Sharding::FsdpGradOp:
        out.commBytes = k * r * (P + G);
        break;
    }
    return out;
}

double median(std::vector<double> values)
{
    if (values.empty())
        return NAN;
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::vector<json> stepEvents(const fs::path& file)
{
    std::vector<json> out;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        json event = json::parse(line, nullptr, false);
        if (!event.is_discarded() && event.value("type", "") == "step")
            out.push_back(std::move(event));
    }
    return out;
}

struct RankFigures {
    double parameters = 0, gradients = 0, master = 0, optimizer = 0; // max over steps
    double total() const { return parameters + gradients + master + optimizer; }
};

struct RunFigures {
    bool found = false;
    int steps = 0;
    double tokensPerSecond = NAN; // rank 0, whole job, median after SKIP
    double stepSeconds = NAN;
    double commBytes = NAN; // rank 0, median after SKIP
    double collectives = NAN;
    double rssPeak = 0; // largest mem_peak_bytes of any rank
    std::vector<RankFigures> ranks;
};

RunFigures readRun(const fs::path& dir, int world, int skip)
{
    RunFigures run;
    for (int rank = 0; rank < world; ++rank) {
        const fs::path file = dir
            / (rank == 0 ? std::string("events.jsonl")
                         : "events.rank" + std::to_string(rank) + ".jsonl");
        const std::vector<json> steps = stepEvents(file);
        if (steps.empty())
            return run;
        RankFigures figures;
        std::vector<double> tps, seconds, comm, collectives;
        for (const json& e : steps) {
            if (const auto it = e.find("state_bytes"); it != e.end()) {
                figures.parameters = std::max(figures.parameters, it->value("parameters", 0.0));
                figures.gradients = std::max(figures.gradients, it->value("gradients", 0.0));
                figures.master = std::max(figures.master, it->value("master", 0.0));
                figures.optimizer = std::max(figures.optimizer, it->value("optimizer", 0.0));
            }
            run.rssPeak = std::max(run.rssPeak, e.value("mem_peak_bytes", 0.0));
            if (rank != 0 || e.value("step", 0) <= skip)
                continue;
            tps.push_back(e.value("tokens_per_second", NAN));
            seconds.push_back(e.value("step_seconds", NAN));
            comm.push_back(e.value("comm_bytes", 0.0));
            collectives.push_back(e.value("comm_collectives", 0.0));
        }
        run.ranks.push_back(figures);
        if (rank == 0) {
            run.steps = static_cast<int>(steps.size());
            run.tokensPerSecond = median(tps);
            run.stepSeconds = median(seconds);
            run.commBytes = median(comm);
            run.collectives = median(collectives);
        }
    }
    run.found = true;
    return run;
}

std::string kib(double bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.0f", bytes / 1024.0);
    return text;
}

std::string ratio(double value, double reference)
{
    if (!(reference > 0) || !std::isfinite(value))
        return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", value / reference);
    return text;
}

int table(const fs::path& root, const std::string& model, int microBatch, int seqLen, int skip)
{
    const std::vector<std::string> shardings = {
        "ddp", "zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op", "fsdp-hybrid"};
    const RunFigures single = readRun(root / "w1-ddp", 1, skip);
    if (!single.found) {
        std::fprintf(
            stderr, "planner_comm_reference: no step events in %s\n", (root / "w1-ddp").c_str());
        return 1;
    }
    std::printf("| ranks | sharding | tokens/s | vs 1 rank | step s | comm KiB/step | planner KiB "
                "| comm/planner | collectives | state KiB/rank (P+G+M+O) | planner KiB/GPU "
                "| state/planner | planner + FSDP gathered KiB | state/that | state vs 1 rank "
                "| RSS peak MiB |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const int world : {1, 2, 4}) {
        for (const std::string& sharding : shardings) {
            if (world == 1 && sharding != "ddp")
                continue; // one process: the sharding has no effect
            const fs::path dir = root / ("w" + std::to_string(world) + "-" + sharding);
            const RunFigures run = readRun(dir, world, skip);
            if (!run.found) {
                std::printf("| %d | %s | (no run) |||||||||||| |\n", world, sharding.c_str());
                continue;
            }
            const std::optional<PlannerFigures> p =
                plannerFigures(model, sharding, world, microBatch, seqLen, 1);
            if (!p)
                return 1;
            // The most any rank held; the ranks differ only by padding.
            RankFigures most;
            for (const RankFigures& r : run.ranks)
                if (r.total() > most.total())
                    most = r;
            char parts[96];
            std::snprintf(parts, sizeof parts, "%s (%s+%s+%s+%s)", kib(most.total()).c_str(),
                kib(most.parameters).c_str(), kib(most.gradients).c_str(), kib(most.master).c_str(),
                kib(most.optimizer).c_str());
            const double withGathered = p->modelStates + p->fsdpGathered;
            std::printf("| %d | %s | %.0f | %s | %.3f | %s | %s | %s | %.0f | %s | %s | %s | %s | "
                        "%s | %s | %.0f |\n",
                world, world == 1 ? "(any)" : sharding.c_str(), run.tokensPerSecond,
                ratio(run.tokensPerSecond, single.tokensPerSecond).c_str(), run.stepSeconds,
                world == 1 ? "0" : kib(run.commBytes).c_str(), kib(p->commBytes).c_str(),
                world == 1 ? "-" : ratio(run.commBytes, p->commBytes).c_str(),
                world == 1 ? 0.0 : run.collectives, parts, kib(p->modelStates).c_str(),
                ratio(most.total(), p->modelStates).c_str(), kib(withGathered).c_str(),
                ratio(most.total(), withGathered).c_str(),
                ratio(most.total(), single.ranks.front().total()).c_str(),
                run.rssPeak / (1024.0 * 1024.0));
        }
    }
    return 0;
}

int usage()
{
    std::fprintf(stderr,
        "usage: planner_comm_reference plan MODEL SHARDING WORLD MICRO_BATCH SEQ_LEN [GRAD_ACCUM]\n"
        "       planner_comm_reference table ROOT MODEL MICRO_BATCH SEQ_LEN SKIP\n");
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() >= 6 && args[0] == "plan") {
        const int accum = args.size() > 6 ? std::atoi(args[6].c_str()) : 1;
        const std::optional<PlannerFigures> p =
            plannerFigures(args[1], args[2], std::atoi(args[3].c_str()), std::atoi(args[4].c_str()),
                std::atoi(args[5].c_str()), std::max(1, accum));
        if (!p)
            return 1;
        std::printf("params=%lld weights=%.0f gradients=%.0f optimizer=%.0f gather=%.0f "
                    "model_states=%.0f comm_bytes=%.0f\n",
            static_cast<long long>(p->paramsTotal), p->weights, p->gradients, p->optimizer,
            p->gather, p->modelStates, p->commBytes);
        return 0;
    }
    if (args.size() == 6 && args[0] == "table")
        return table(args[1], args[2], std::atoi(args[3].c_str()), std::atoi(args[4].c_str()),
            std::atoi(args[5].c_str()));
    return usage();
}
