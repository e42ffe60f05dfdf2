// Planner speed: one estimate (with and without explanations), the what-if
// sweeps the GUI draws, and the whole recommender sweep (every Azure size x
// 1..16 nodes x 7 strategies). Each figure is printed with its ratio to a
// reference measured in the same process (sorting 4,096 doubles), so runs on
// different machines compare. Not a test: nothing here passes or fails.
#include "../../support/test_paths.h"
#include "plan/catalog.h"
#include "plan/estimator.h"
#include "plan/recommender.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <time.h>
#include <vector>

using namespace tb;
using Clock = std::chrono::steady_clock;

namespace {

volatile double g_sink = 0;

// This thread's CPU time: on a shared, loaded machine wall-clock rounds
// include time slices given to other processes; CPU time does not.
double threadCpuSeconds()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Median seconds per call (thread CPU time) over `rounds` rounds of `calls`
// calls; the median wall-clock time per call goes to *wall.
double medianSeconds(
    int rounds, int calls, const std::function<void()>& work, double* wall = nullptr)
{
    std::vector<double> cpu, elapsed;
    for (int r = 0; r < rounds; ++r) {
        const auto start = Clock::now();
        const double cpuStart = threadCpuSeconds();
        for (int i = 0; i < calls; ++i)
            work();
        cpu.push_back((threadCpuSeconds() - cpuStart) / calls);
        elapsed.push_back(std::chrono::duration<double>(Clock::now() - start).count() / calls);
    }
    std::sort(cpu.begin(), cpu.end());
    std::sort(elapsed.begin(), elapsed.end());
    if (wall)
        *wall = elapsed[elapsed.size() / 2];
    return cpu[cpu.size() / 2];
}

void report(const char* what, double seconds, double reference, double wall)
{
    std::printf("%-58s %10.2f us CPU %10.2f us wall   %7.4f x reference\n", what, seconds * 1e6,
        wall * 1e6, seconds / reference);
}

} // namespace

int main()
{
    const auto catalog = plan::Catalog::load(tb::test::sourcePath("presets"));
    if (!catalog) {
        std::fprintf(stderr, "%s\n", catalog.error().message.c_str());
        return 1;
    }
    std::mt19937_64 rng(42);
    std::vector<double> unsorted(4096);
    for (double& v : unsorted)
        v = std::uniform_real_distribution<double>(0, 1)(rng);
    double wall = 0;
    const double reference = medianSeconds(
        31, 50,
        [&] {
            std::vector<double> copy = unsorted;
            std::sort(copy.begin(), copy.end());
            g_sink = g_sink + copy[17];
        },
        &wall);
    std::printf("reference: std::sort of 4,096 doubles = %.2f us CPU (%.2f us wall)\n\n",
        reference * 1e6, wall * 1e6);

    const model::ModelSpec& llama = *catalog->findModel("Llama-3.1-8B");
    const plan::GpuSpec& a100 = *catalog->findGpu("A100-80GB-PCIe");
    const plan::VmSize* vm = catalog->findVm("Standard_NC24ads_A100_v4");
    const plan::PlanInput defaultPlan;

    const double explained = medianSeconds(
        31, 2000,
        [&] { g_sink = g_sink + plan::estimatePlan(defaultPlan, llama, a100, vm).perGpuBytes; },
        &wall);
    report("one estimate, default plan, with explanations", explained, reference, wall);
    const double quiet = medianSeconds(
        31, 2000,
        [&] {
            g_sink = g_sink
                + plan::estimatePlan(defaultPlan, llama, a100, vm, plan::EstimateOptions{false})
                      .perGpuBytes;
        },
        &wall);
    report("one estimate, default plan, without explanations", quiet, reference, wall);

    plan::PlanInput fsdp;
    fsdp.model = "Llama-3.3-70B-Instruct";
    fsdp.vmSize = "Standard_ND96isr_H100_v5";
    fsdp.gpusPerNode = 2;
    fsdp.sharding = plan::Sharding::FsdpFull;
    const model::ModelSpec& seventy = *catalog->findModel(fsdp.model);
    const plan::GpuSpec& h100 = *catalog->findGpu("H100-SXM");
    const plan::VmSize* nd = catalog->findVm(fsdp.vmSize);
    const double fsdpExplained = medianSeconds(
        31, 2000,
        [&] { g_sink = g_sink + plan::estimatePlan(fsdp, seventy, h100, nd).perGpuBytes; }, &wall);
    report("one estimate, 70B LoRA FSDP on 2 x H100, with explanations", fsdpExplained, reference,
        wall);

    std::vector<long long> batches;
    for (long long b = 1; b <= 64; ++b)
        batches.push_back(b);
    const double sweep = medianSeconds(
        15, 20,
        [&] {
            g_sink = g_sink
                + double(plan::sweepPlan(
                    defaultPlan, llama, a100, vm, plan::SweepAxis::MicroBatch, batches)
                             .size());
        },
        &wall);
    report("what-if sweep, micro-batch 1..64 (64 estimates)", sweep, reference, wall);
    const double largest = medianSeconds(
        15, 20,
        [&] {
            g_sink = g_sink
                + double(
                    plan::largestFittingMicroBatch(defaultPlan, llama, a100, vm, 1024).value_or(0));
        },
        &wall);
    report("largest fitting micro-batch (binary search to 1024)", largest, reference, wall);

    int evaluated = 0;
    const double recommender = medianSeconds(
        9, 3,
        [&] {
            const plan::Recommendation rec = plan::recommend(defaultPlan, llama, *catalog);
            evaluated = rec.evaluated;
            g_sink = g_sink + double(rec.options.size());
        },
        &wall);
    char label[96];
    std::snprintf(label, sizeof label, "recommender sweep (%d estimates, 38 sizes x 16 nodes x 7)",
        evaluated);
    report(label, recommender, reference, wall);
    std::printf("\nCPU time: recommender sweep %.2f ms (target < 20 ms); one explained estimate "
                "%.2f us (target < 10 us)\n",
        recommender * 1e3, explained * 1e6);
    return 0;
}
