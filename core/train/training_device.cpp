#include "train/training_device.h"

#include "common/build_info.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace tb::train {

using common::Error;

namespace {

bool cudaVisible()
{
    return torch::cuda::is_available();
}

std::string visibleDevicesNote()
{
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : std::string();
}

// The launcher gave this process exactly one GPU (srun --gpus-per-task=1,
// or a scheduler that sets CUDA_VISIBLE_DEVICES per task): every local rank
// uses the only device it sees.
bool oneGpuPerTask(int visibleCount)
{
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return visibleCount == 1 && visible && std::string(visible).find(',') == std::string::npos;
}

bool cpuOffloadForTests()
{
    const char* value = std::getenv(kCpuOffloadForTests);
    return value && std::string(value) == "1";
}

common::Result<c10::Device> cudaDevice(const config::RunConfig& config, int localRank)
{
    if (!cudaVisible())
        return Error::at(config.model, "device",
            "cuda was asked for, but LibTorch " TORCH_VERSION " sees no CUDA GPU"
                + visibleDevicesNote(),
            std::string(common::buildinfo::kLibTorchFlavour) == "cuda"
                ? "check nvidia-smi, the driver and CUDA_VISIBLE_DEVICES"
                : "this trainer is built against the CPU wheel of PyTorch: build it with "
                  "TUNEBENCH_TORCH=cuda packaging/setup.sh build, or set device: cpu");
    // A signed byte (c10::DeviceIndex), widened as it is.
    const auto count =
        static_cast<int>(torch::cuda::device_count()); // NOLINT(bugprone-signed-char-misuse)
    if (oneGpuPerTask(count))
        localRank = 0;
    if (localRank >= count)
        return Error::at(config.model, "device",
            "LOCAL_RANK " + std::to_string(localRank) + " needs GPU " + std::to_string(localRank)
                + ", but " + std::to_string(count) + " GPU(s) are visible" + visibleDevicesNote(),
            "start at most one rank per GPU (--nproc-per-node " + std::to_string(count) + ")");
    const c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(localRank));
    at::accelerator::setDeviceIndex(device.index());
    return device;
}

} // namespace

common::Result<c10::Device> selectTrainingDevice(const config::RunConfig& config, int localRank)
{
    const bool cuda = config.device == config::Device::Cuda
        || (config.device == config::Device::Auto && cudaVisible());
    if (cuda)
        return cudaDevice(config, localRank);
    if (config.distributed.offload != config::Offload::None && !cpuOffloadForTests())
        return Error::at(config.model, "distributed.offload",
            "offload " + std::string(config::toString(config.distributed.offload))
                + " moves states from GPU memory to the CPU, but this run trains on the CPU, "
                  "where they already are",
            "set distributed.offload: none, or train on a GPU (device: cuda)");
    return c10::Device(c10::DeviceType::CPU);
}

std::string describeDevice(const c10::Device& device)
{
    if (!device.is_cuda())
        return "cpu";
    return device.str() + " of " + std::to_string(torch::cuda::device_count()) + " GPU(s)";
}

std::string cudaDeviceName(const c10::Device& device)
{
    if (!device.is_cuda())
        return {};
    // The driver's C API, stable across CUDA versions: the same binary runs
    // with the CPU and the CUDA wheel, so nothing CUDA is linked in.
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver)
        return {};
    using DeviceGet = int (*)(int*, int);
    using DeviceGetName = int (*)(char*, int, int);
    auto* get = reinterpret_cast<DeviceGet>(dlsym(driver, "cuDeviceGet"));
    auto* getName = reinterpret_cast<DeviceGetName>(dlsym(driver, "cuDeviceGetName"));
    std::string name;
    int handle = 0;
    char text[256] = {};
    if (get && getName && get(&handle, device.index()) == 0
        && getName(text, static_cast<int>(sizeof text) - 1, handle) == 0)
        name = text;
    dlclose(driver);
    return name;
}

DeviceMemory deviceMemory(const c10::Device& device)
{
    if (!device.is_cuda())
        return {};
    const auto stats = at::accelerator::getDeviceStats(device.index());
    const auto all = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    DeviceMemory memory;
    memory.allocatedBytes = stats.allocated_bytes[all].current;
    memory.peakAllocatedBytes = stats.allocated_bytes[all].peak;
    memory.reservedBytes = stats.reserved_bytes[all].current;
    memory.peakReservedBytes = stats.reserved_bytes[all].peak;
    return memory;
}

void resetDevicePeakMemory(const c10::Device& device)
{
    if (device.is_cuda())
        at::accelerator::resetPeakStats(device.index());
}

at::Generator makeGenerator(const c10::Device& device, std::uint64_t seed)
{
    if (!device.is_cuda())
        return at::detail::createCPUGenerator(seed);
    at::Generator generator = at::detail::getCUDAHooks().getNewGenerator(device.index());
    generator.set_current_seed(seed);
    return generator;
}

std::string generatorDeviceType(const at::Generator& generator)
{
    return generator.device().is_cuda() ? "cuda" : "cpu";
}

} // namespace tb::train
