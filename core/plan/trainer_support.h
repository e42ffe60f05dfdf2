#pragma once

#include "model/model_spec.h"
#include "plan/hardware.h"

#include <string>

// Whether Tunebench's own trainer can run on a GPU. It is built against the
// CUDA build of LibTorch named in packaging/torch-versions.txt (CUDA 13), so
// it runs on NVIDIA GPUs that CUDA 13 still supports, and on nothing else.
// And whether it computes a model at all: the family list its config
// reader refuses by (model/trainer_families.h).
namespace tb::plan {

struct TrainerSupport {
    bool runs = true;
    std::string reason; // why not (empty when it runs)
};

TrainerSupport tunebenchTrainerSupport(const GpuSpec& gpu);
TrainerSupport tunebenchTrainerSupport(const model::ModelSpec& model);
// The model first: a family the trainer does not compute runs nowhere.
TrainerSupport tunebenchTrainerSupport(const GpuSpec& gpu, const model::ModelSpec& model);

} // namespace tb::plan
