#include "plan/trainer_support.h"

#include "common/text.h"
#include "model/trainer_families.h"

namespace tb::plan {

namespace {

// CUDA 13 removed offline compilation and library support for these
// architectures (CUDA 13.0 release notes), so the CUDA 13 LibTorch wheel
// has no kernels for them.
constexpr const char* kDroppedByCuda13[] = {"Kepler", "Maxwell", "Pascal", "Volta"};

} // namespace

TrainerSupport tunebenchTrainerSupport(const GpuSpec& gpu)
{
    if (gpu.isCpu)
        return {};
    if (common::toLower(gpu.vendor) != "nvidia")
        return {false,
            gpu.vendor + " GPU: Tunebench's trainer is built on LibTorch for CUDA, not ROCm"};
    for (const char* architecture : kDroppedByCuda13)
        if (gpu.architecture.rfind(architecture, 0) == 0)
            return {false,
                std::string(architecture)
                    + " GPU: the CUDA 13 LibTorch Tunebench's trainer is built on no longer "
                      "supports it"};
    return {};
}

TrainerSupport tunebenchTrainerSupport(const model::ModelSpec& model)
{
    model::TrainerFamilySupport family = model::trainerFamilySupport(model.modelType);
    return {family.runs, std::move(family.reason)};
}

TrainerSupport tunebenchTrainerSupport(const GpuSpec& gpu, const model::ModelSpec& model)
{
    TrainerSupport support = tunebenchTrainerSupport(model);
    return support.runs ? tunebenchTrainerSupport(gpu) : support;
}

} // namespace tb::plan
