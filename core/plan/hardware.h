#pragma once

#include "common/error.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// GPUs and Azure VM sizes, read from presets/hardware/{gpus,vms}.yaml. Each
// entry keeps the sources its numbers were read from (shared/data/azure).
namespace tb::plan {

// Achievable fraction of the dense peak for a training method on a GPU kind:
// a documented assumption until calibrated from measured runs.
struct Utilisation {
    double full = 0.40;
    double lora = 0.35;
    double qlora = 0.25;
    std::string note; // where the figure comes from (assumption or measured run)
};

struct GpuSpec {
    std::string id; // "A100-80GB-SXM" (key in gpus.yaml)
    std::string name; // "NVIDIA A100 80GB SXM4"
    std::vector<std::string> aliases; // "a100-80gb", "a100"
    std::vector<std::string> deviceNames; // what CUDA calls it: "NVIDIA A100-SXM4-80GB"
    std::string vendor;
    std::string architecture;

    double memoryGiB = 0; // marketed memory (NVIDIA's "80 GB" HBM is 80 GiB)
    double usableGiB = 0; // what the CUDA allocator can hand out (total minus driver/ECC reserve)
    std::string usableNote; // where usableGiB comes from
    bool bf16Supported = false;
    double bf16Tflops = 0; // dense tensor-core peak, 0 when unsupported
    double fp16Tflops = 0; // dense
    double tf32Tflops = 0; // dense; 0 when the GPU has no TF32
    double fp32Tflops = 0; // non-tensor
    double memBandwidthGBps = 0;
    double linkGBps = 0; // GPU-to-GPU inside a node, per GPU, both directions (NVLink or PCIe)
    std::string linkKind; // "NVLink 3 (600 GB/s)", "PCIe Gen4 x16"
    double hostLinkGBps = 0; // GPU-to-CPU (PCIe), both directions: offload transfers
    Utilisation utilisation;
    std::vector<std::string> sources;
    bool isCpu =
        false; // this machine's CPU (cpu_device.h): no CUDA context, NCCL or caching allocator

    double usableBytes() const;
};

struct VmSize {
    std::string name; // "Standard_ND96amsr_A100_v4"
    std::string series; // "NDm A100 v4"
    std::string status; // "ga", "retired", "preview"
    std::string statusNote; // Azure's wording
    std::string gpuId; // key into the GPU list
    int gpusPerVm = 0;
    bool fractionalGpu = false; // vGPU slices (NV A10 v5 small sizes): not for training
    double gpuFraction = 1.0; // the slice of the GPU a fractional size gets
    int vcpus = 0;
    double ramGiB = 0;
    double intraLinkGBps = 0; // per GPU inside the VM, 0: the GPU's own figure
    std::string intraLinkNote;
    double interNodeGbpsPerGpu = 0; // InfiniBand per GPU in Gbit/s, 0: none stated
    double frontendGbps = 0; // Ethernet per VM in Gbit/s (multi-node fallback)
    std::string interconnect; // "8 x 200 Gb/s HDR InfiniBand"
    std::optional<double> usdPerHour; // Linux pay-as-you-go, one VM
    std::string priceRegion;
    std::string priceAsOf;
    std::string priceSource;
    std::vector<std::string> sources;
    std::vector<std::string> notes;
    // What runs on it, as typed facts the recommender shows beside every
    // option on the size (not read from the notes' prose).
    bool rocm = false; // software_stack: rocm (AMD GPUs), else cuda
    bool arm64Host = false; // host_arch: arm64 (Grace), else x86_64
};

// Errors name the file, the entry and the key; unknown and duplicate keys are errors.
common::Result<std::vector<GpuSpec>> parseGpuPresets(
    std::string_view yaml, const std::string& origin);
common::Result<std::vector<VmSize>> parseVmPresets(
    std::string_view yaml, const std::string& origin, const std::vector<GpuSpec>& gpus);

} // namespace tb::plan
