#pragma once

#include "plan/hardware.h"

#include <string>

// Whether Tunebench's own trainer can run on a GPU. It is built against the
// CUDA build of LibTorch named in packaging/torch-versions.txt (CUDA 13), so
// it runs on NVIDIA GPUs that CUDA 13 still supports, and on nothing else.
namespace tb::plan {

struct TrainerSupport {
    bool runs = true;
    std::string reason; // why not (empty when it runs)
};

TrainerSupport tunebenchTrainerSupport(const GpuSpec& gpu);

} // namespace tb::plan
