#include "plan/cpu_device.h"

#include "common/atomic_file.h"
#include "common/units.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace tb::plan {

namespace {

constexpr std::ptrdiff_t kBlock = 256;
// A training step's GEMMs on a CPU reach about half of a plain GEMM's rate
// once the element-wise work between them is counted: an assumption until
// the compare-runs calibration measures it.
constexpr double kCpuUtilisation = 0.5;
// Ranks on one machine talk through Gloo over loopback TCP: an assumption.
constexpr double kLoopbackGBps = 10;

// C += A x B for one block, the i-k-j order so the inner loop is a
// contiguous axpy the compiler vectorises; four rows of C at a time so each
// row of B is loaded once for four of them.
void multiplyBlock(const float* __restrict a, const float* __restrict b, float* __restrict c)
{
    for (std::ptrdiff_t i = 0; i < kBlock; i += 4)
        for (std::ptrdiff_t k = 0; k < kBlock; ++k) {
            const float a0 = a[i * kBlock + k], a1 = a[(i + 1) * kBlock + k];
            const float a2 = a[(i + 2) * kBlock + k], a3 = a[(i + 3) * kBlock + k];
            const float* __restrict bRow = b + k * kBlock;
            float* __restrict c0 = c + i * kBlock;
            for (std::ptrdiff_t j = 0; j < kBlock; ++j) {
                const float bj = bRow[j];
                c0[j] += a0 * bj;
                c0[kBlock + j] += a1 * bj;
                c0[2 * kBlock + j] += a2 * bj;
                c0[3 * kBlock + j] += a3 * bj;
            }
        }
}

// Blocks multiplied by one thread: the first whatever the clock says, so a
// thread that starts after the deadline, or a block slower than the whole
// budget (a loaded machine, a sanitizer build), still adds to the rate
// rather than leaving it at 0.
long long multiplyUntil(std::chrono::steady_clock::time_point deadline)
{
    constexpr auto kElements = static_cast<std::size_t>(kBlock * kBlock);
    std::vector<float> a(kElements, 0.5f), b(kElements, 0.25f), c(kElements, 0.0f);
    long long blocks = 0;
    do {
        multiplyBlock(a.data(), b.data(), c.data());
        ++blocks;
    } while (std::chrono::steady_clock::now() < deadline);
    // Keeps the result observable so the loop is not optimised away.
    volatile float sink = c[0];
    (void)sink;
    return blocks;
}

std::string cpuModelName()
{
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            return colon == std::string::npos ? std::string() : line.substr(colon + 2);
        }
    }
    return {};
}

// The cache file's facts as written, whichever CPU they describe; nothing
// when it is absent or broken (then the rate is measured again).
std::optional<CpuFacts> readCache(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        return std::nullopt;
    try {
        const nlohmann::json j = nlohmann::json::parse(in);
        CpuFacts f;
        f.cores = j.at("cores").get<int>();
        f.memoryBytes = j.at("memory_bytes").get<double>();
        f.matmulGflops = j.at("matmul_gflops").get<double>();
        f.model = j.at("model").get<std::string>();
        return f;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// Whether the cache speaks for this CPU model: a rate that a hand edit or an
// older Tunebench left at 0 says nothing, and is measured over.
bool cacheOfThisModel(const CpuFacts& cached, const CpuFacts& now)
{
    return cached.model == now.model && cached.cores > 0
        && checkMatmulGflops(cached.matmulGflops, 0).ok();
}

// What a new measurement should come near: the cached rate of this CPU
// model per core, times this machine's cores (a resized VM keeps its model
// and changes its core count); 0, nothing to compare with, for another
// model, whose rate says nothing of this one.
double expectedGflops(const std::optional<CpuFacts>& cached, const CpuFacts& now)
{
    if (!cached || !cacheOfThisModel(*cached, now))
        return 0;
    return cached->matmulGflops / cached->cores * now.cores;
}

void writeCache(const std::string& path, const CpuFacts& f)
{
    std::error_code ignored; // a cache: failing to write it is fine
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
    const nlohmann::json j{{"cores", f.cores}, {"memory_bytes", f.memoryBytes},
        {"matmul_gflops", f.matmulGflops}, {"model", f.model}};
    (void)common::writeFileAtomic(path, j.dump(2) + "\n");
}

CpuFacts factsWithoutRate()
{
    CpuFacts f;
    f.cores = std::max(1, int(std::thread::hardware_concurrency()));
    f.memoryBytes = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    f.model = cpuModelName();
    return f;
}

} // namespace

double measureMatmulGflops(int threads, double seconds)
{
    threads = std::max(1, threads);
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start
        + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(seconds));
    std::vector<long long> blocks(size_t(threads), 0);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back(
            [&blocks, t, deadline] { blocks[size_t(t)] = multiplyUntil(deadline); });
    for (std::thread& w : workers)
        w.join();
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    long long total = 0;
    for (long long b : blocks)
        total += b;
    const double flops = 2.0 * kBlock * kBlock * kBlock * double(total);
    return elapsed > 0 ? flops / elapsed / 1e9 : 0;
}

common::Status checkMatmulGflops(double gflops, double expectedGflops)
{
    const std::string what = "this CPU's fp32 GEMM rate (matmul_gflops): measured "
        + common::formatFixed(gflops, 1) + " GFLOP/s, expected ";
    const std::string lowWhen =
        expectedGflops > 0 ? ", now or when the earlier figure was taken" : "";
    const std::string hint = "a loaded machine or a sanitizer build measures low" + lowWhen
        + ": measure on an idle machine";
    if (!std::isfinite(gflops) || gflops <= 0)
        return common::Error{what + "a positive, finite rate", hint};
    if (expectedGflops <= 0)
        return common::Ok{};
    const double low = expectedGflops / kMatmulGflopsTolerance;
    const double high = expectedGflops * kMatmulGflopsTolerance;
    if (gflops < low || gflops > high)
        return common::Error{what + common::formatFixed(low, 1) + " to "
                + common::formatFixed(high, 1) + " GFLOP/s (within "
                + common::formatFixed(kMatmulGflopsTolerance, 0) + "x of the "
                + common::formatFixed(expectedGflops, 1)
                + " an earlier measurement of this CPU model gives)",
            hint};
    return common::Ok{};
}

common::Result<double> measurePlausibleGflops(
    const std::function<double()>& measure, double expectedGflops)
{
    const double first = measure();
    if (checkMatmulGflops(first, expectedGflops))
        return first;
    const double second = measure();
    const common::Status plausible = checkMatmulGflops(second, expectedGflops);
    if (!plausible)
        return common::Error{plausible.error().message + "; measured twice, the first gave "
                + common::formatFixed(first, 1) + " GFLOP/s",
            plausible.error().hint};
    return second;
}

common::Result<CpuFacts> measureThisCpu()
{
    CpuFacts f = factsWithoutRate();
    const common::Result<double> gflops =
        measurePlausibleGflops([&f] { return measureMatmulGflops(f.cores); }, 0);
    if (!gflops)
        return gflops.error();
    f.matmulGflops = *gflops;
    return f;
}

common::Result<CpuFacts> cachedOrMeasuredCpu(
    const std::string& path, const CpuFacts& now, const std::function<double()>& measure)
{
    const std::optional<CpuFacts> cached = path.empty() ? std::nullopt : readCache(path);
    if (cached && cached->cores == now.cores && cacheOfThisModel(*cached, now)) {
        CpuFacts f = *cached;
        f.memoryBytes = now.memoryBytes; // RAM can change with the VM; it costs nothing to read
        return f;
    }
    const double expected = expectedGflops(cached, now);
    const common::Result<double> gflops = measurePlausibleGflops(measure, expected);
    if (!gflops) {
        common::Error refused = gflops.error();
        if (expected > 0)
            refused.hint +=
                "; if this machine really changed, delete " + path + " to measure afresh";
        return refused;
    }
    CpuFacts f = now;
    f.matmulGflops = *gflops;
    if (!path.empty())
        writeCache(path, f);
    return f;
}

std::string cpuFactsCachePath()
{
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return std::string(xdg) + "/tunebench/cpu.json";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.cache/tunebench/cpu.json";
    return {};
}

common::Result<CpuFacts> thisCpu()
{
    static std::mutex mutex;
    // Only accepted facts are kept: after a refusal the load behind it may
    // have passed, and a long-lived process (the GUI) should not keep it.
    static std::optional<CpuFacts> facts;
    const std::lock_guard lock(mutex);
    if (facts)
        return *facts;
    const CpuFacts now = factsWithoutRate();
    common::Result<CpuFacts> found = cachedOrMeasuredCpu(
        cpuFactsCachePath(), now, [&now] { return measureMatmulGflops(now.cores); });
    if (found)
        facts = *found;
    return found;
}

GpuSpec cpuDevice(const CpuFacts& facts)
{
    GpuSpec d;
    d.id = kCpuDeviceId;
    d.name = facts.model.empty() ? "this machine's CPU" : facts.model;
    d.vendor = "cpu";
    d.architecture = "cpu";
    d.isCpu = true;
    d.memoryGiB = facts.memoryBytes / common::kGiB;
    d.usableGiB = d.memoryGiB;
    d.usableNote = "physical RAM (sysconf), shared by the ranks on this machine";
    d.bf16Supported = true; // emulated or AMX: planned at the measured fp32 rate
    d.fp32Tflops = facts.matmulGflops / 1000;
    d.bf16Tflops = d.fp32Tflops;
    d.fp16Tflops = d.fp32Tflops;
    d.tf32Tflops = 0;
    d.linkGBps = kLoopbackGBps;
    d.linkKind = "Gloo over loopback TCP (assumed 10 GB/s)";
    d.utilisation = {kCpuUtilisation, kCpuUtilisation, kCpuUtilisation,
        "assumption: a training step reaches half the measured GEMM rate"};
    d.sources = {"measured on this machine: " + std::to_string(facts.cores) + " cores, "
        + common::formatBytes(facts.memoryBytes) + ", fp32 GEMM "
        + common::formatFixed(facts.matmulGflops, 1) + " GFLOP/s"};
    return d;
}

} // namespace tb::plan
