#pragma once

#include "common/error.h"
#include "config/run_config.h"

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <string>

// Which device a rank trains on, and what its caching allocator holds.
// Written against LibTorch's device-generic API (at::accelerator, the CUDA
// hooks), so the same code compiles with the CPU and the CUDA wheel and
// finds the GPU at run time.
namespace tb::train {

// config.device with `auto` resolved (CUDA when LibTorch sees a GPU), and a
// rank's GPU, made the current device (NCCL and the allocator follow it):
// cuda:LOCAL_RANK, or cuda:0 where the launcher gave each task one GPU of
// its own (CUDA_VISIBLE_DEVICES holding one index, as srun
// --gpus-per-task=1 does). Refuses what cannot run: cuda with no GPU
// visible, more local ranks than GPUs, CPU offload on the CPU (unless
// kCpuOffloadForTests is set).
common::Result<c10::Device> selectTrainingDevice(const config::RunConfig& config, int localRank);

// Set to 1, a run on the CPU accepts distributed.offload and keeps the
// offloaded states in host buffers of their own, so that the tests run
// every offload line (staging, accumulation, checkpoints) without a GPU.
// No use outside tests: on the CPU the states are in host memory already.
inline constexpr const char* kCpuOffloadForTests = "TUNEBENCH_TEST_CPU_OFFLOAD";

// "cpu", or "cuda:0" with the GPU count, for logs and run_start.
std::string describeDevice(const c10::Device& device);

// What CUDA calls the GPU behind `device` ("NVIDIA H100 80GB HBM3", as
// torch.cuda.get_device_name says), read from the driver (libcuda) the
// CUDA context already loaded; empty on the CPU or when the driver does
// not answer.
std::string cudaDeviceName(const c10::Device& device);

// The CUDA caching allocator's figures for `device` (torch.cuda.memory_allocated,
// memory_reserved and their peaks); all -1 on the CPU, which has no such
// allocator (process_memory.h gives resident memory there).
struct DeviceMemory {
    std::int64_t allocatedBytes = -1;
    std::int64_t reservedBytes = -1;
    std::int64_t peakAllocatedBytes = -1;
    std::int64_t peakReservedBytes = -1;
};
DeviceMemory deviceMemory(const c10::Device& device);
// Starts the peaks again from the current figures (no-op on the CPU).
void resetDevicePeakMemory(const c10::Device& device);

// A generator of its own on `device` seeded with `seed`: the per-rank
// dropout stream must live where the dropout masks are drawn.
at::Generator makeGenerator(const c10::Device& device, std::uint64_t seed);
// "cuda" or "cpu": the device type whose state layout the generator has
// (what a checkpoint records beside the state).
std::string generatorDeviceType(const at::Generator& generator);

} // namespace tb::train
