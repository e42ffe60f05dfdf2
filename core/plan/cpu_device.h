#pragma once

#include "plan/hardware.h"

#include <string>

// This machine's CPU as a planner device, so a run of Tunebench's trainer on
// the CPU can be held against its plan. A plan names it with gpu "cpu"
// (`tunebench-cli plan --gpu cpu`); gpus_per_node is then the number of
// ranks sharing the machine, each planned with its share of the cores and
// of the memory. docs/PLANNER.md, "Planning a CPU run".
namespace tb::plan {

inline constexpr const char* kCpuDeviceId = "cpu";

struct CpuFacts {
    int cores = 0; // logical CPUs
    double memoryBytes = 0; // physical RAM
    double matmulGflops = 0; // measured fp32 GEMM rate over all cores
    std::string model; // /proc/cpuinfo "model name", empty when unknown
};

// The fp32 GEMM rate of `threads` threads, each multiplying its own
// 256 x 256 blocks for about `seconds`. No LibTorch: a small blocked loop
// that compilers vectorise, which a training step's GEMMs reach or beat.
double measureMatmulGflops(int threads, double seconds = 0.2);

// Cores, RAM and the GEMM rate measured now (about 0.2 s).
CpuFacts measureThisCpu();

// This machine's facts, measured once: from this process's first call, else
// from the cache file (cpuFactsCachePath(), when it names the same CPU model
// and core count), else measured and written there.
const CpuFacts& thisCpu();
std::string cpuFactsCachePath(); // $XDG_CACHE_HOME or ~/.cache, /tunebench/cpu.json

// The device a CPU plan uses: peak = the measured GEMM rate, usable memory =
// the RAM, no CUDA context, no NCCL, no caching allocator.
GpuSpec cpuDevice(const CpuFacts& facts);

} // namespace tb::plan
