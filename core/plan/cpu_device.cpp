#include "plan/cpu_device.h"

#include "common/atomic_file.h"
#include "common/units.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace tb::plan {

namespace {

constexpr int kBlock = 256;
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
    for (int i = 0; i < kBlock; i += 4)
        for (int k = 0; k < kBlock; ++k) {
            const float a0 = a[i * kBlock + k], a1 = a[(i + 1) * kBlock + k];
            const float a2 = a[(i + 2) * kBlock + k], a3 = a[(i + 3) * kBlock + k];
            const float* __restrict bRow = b + k * kBlock;
            float* __restrict c0 = c + i * kBlock;
            for (int j = 0; j < kBlock; ++j) {
                const float bj = bRow[j];
                c0[j] += a0 * bj;
                c0[kBlock + j] += a1 * bj;
                c0[2 * kBlock + j] += a2 * bj;
                c0[3 * kBlock + j] += a3 * bj;
            }
        }
}

// Blocks multiplied by one thread until the deadline.
long long multiplyUntil(std::chrono::steady_clock::time_point deadline)
{
    std::vector<float> a(kBlock * kBlock, 0.5f), b(kBlock * kBlock, 0.25f),
        c(kBlock * kBlock, 0.0f);
    long long blocks = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        multiplyBlock(a.data(), b.data(), c.data());
        ++blocks;
    }
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

std::optional<CpuFacts> readCache(const std::string& path, const CpuFacts& now)
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
        if (f.cores != now.cores || f.model != now.model || f.matmulGflops <= 0)
            return std::nullopt;
        f.memoryBytes = now.memoryBytes; // RAM can change with the VM; it costs nothing to read
        return f;
    } catch (const std::exception&) {
        return std::nullopt; // a stale or broken cache is measured again
    }
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
    const auto deadline =
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(seconds));
    std::vector<long long> blocks(size_t(threads), 0);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&blocks, t, deadline] { blocks[size_t(t)] = multiplyUntil(deadline); });
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

CpuFacts measureThisCpu()
{
    CpuFacts f = factsWithoutRate();
    f.matmulGflops = measureMatmulGflops(f.cores);
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

const CpuFacts& thisCpu()
{
    static std::once_flag once;
    static CpuFacts facts;
    std::call_once(once, [] {
        const CpuFacts now = factsWithoutRate();
        const std::string path = cpuFactsCachePath();
        if (const std::optional<CpuFacts> cached = path.empty() ? std::nullopt : readCache(path, now)) {
            facts = *cached;
            return;
        }
        facts = now;
        facts.matmulGflops = measureMatmulGflops(now.cores);
        if (!path.empty())
            writeCache(path, facts);
    });
    return facts;
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
