#pragma once

#include "common/error.h"
#include "plan/hardware.h"

#include <functional>
#include <string>

// This machine's CPU as a planner device, so a run of Tunebench's trainer on
// the CPU can be held against its plan. A plan names it with gpu "cpu"
// (`tunebench-cli plan --gpu cpu`); gpus_per_node is then the number of
// ranks sharing the machine, each planned with its share of the cores and
// of the memory. docs/PLANNER.md, "Planning a CPU run".
namespace tb::plan {

inline constexpr const char* kCpuDeviceId = "cpu";

// How far either way a measured GEMM rate may stray from the one cached for
// this CPU model before it is refused. Load, turbo and power states move one
// machine's rate by up to about 2x between runs; 4x is beyond that, so a
// figure further off is a broken measurement (a starved VM, a sanitizer
// build) rather than the CPU, and every CPU plan built on it would be as far
// off in step time.
inline constexpr double kMatmulGflopsTolerance = 4;

struct CpuFacts {
    int cores = 0; // logical CPUs
    double memoryBytes = 0; // physical RAM
    double matmulGflops = 0; // measured fp32 GEMM rate over all cores
    std::string model; // /proc/cpuinfo "model name", empty when unknown
};

// The fp32 GEMM rate of `threads` threads, each multiplying its own
// 256 x 256 blocks for about `seconds`: the flops done over the wall time
// they really took. Every thread multiplies at least one block, so a thread
// that starts late or a block slower than the whole budget still counts,
// and the rate is positive however small the budget or busy the machine.
// No LibTorch: a small blocked loop that compilers vectorise, which a
// training step's GEMMs reach or beat.
double measureMatmulGflops(int threads, double seconds = 0.2);

// Whether `gflops` can stand for this CPU's GEMM rate: positive and finite,
// and, when `expectedGflops` > 0 (what an earlier measurement of this CPU
// gave), within kMatmulGflopsTolerance of it either way. The error names the
// figure, the value and the range expected.
common::Status checkMatmulGflops(double gflops, double expectedGflops);

// The rate `measure` gives, measured again once when checkMatmulGflops
// refuses it, so a passing burst of load costs one more measurement rather
// than the plan; a second refusal is the error.
common::Result<double> measurePlausibleGflops(
    const std::function<double()>& measure, double expectedGflops);

// Cores, RAM and the GEMM rate measured now (about 0.2 s), or why the rate
// was refused.
common::Result<CpuFacts> measureThisCpu();

// The facts of the CPU described by `now` (cores, RAM, model): from the
// cache file at `path` when it names the same CPU model and core count,
// else `now` with the rate `measure` gives, checked by
// measurePlausibleGflops against the cached rate of the same model scaled to
// this core count. Only a plausible rate is written to `path` (when not
// empty): a refused one would be reused by every later plan.
common::Result<CpuFacts> cachedOrMeasuredCpu(
    const std::string& path, const CpuFacts& now, const std::function<double()>& measure);

// This machine's facts, measured once per process: cachedOrMeasuredCpu on
// cpuFactsCachePath(). A refusal is not kept; the next call measures again.
common::Result<CpuFacts> thisCpu();
std::string cpuFactsCachePath(); // $XDG_CACHE_HOME or ~/.cache, /tunebench/cpu.json

// The device a CPU plan uses: peak = the measured GEMM rate, usable memory =
// the RAM, no CUDA context, no NCCL, no caching allocator.
GpuSpec cpuDevice(const CpuFacts& facts);

} // namespace tb::plan
