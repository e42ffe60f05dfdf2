#pragma once

#include "common/error.h"
#include "model/model_spec.h"
#include "plan/hardware.h"

#include <string>
#include <string_view>
#include <vector>

namespace tb::plan {

// The presets folder: $TUNEBENCH_PRESETS_DIR when set, else <source>/presets
// in a development build, else <prefix>/share/tunebench/presets next to the
// installed executable, else the configured install data dir. Empty when
// none exists.
std::string defaultPresetsDir();

// All model and hardware presets. Lookups are case-insensitive; models are
// also found by Hugging Face repo id and aliases, VM sizes with or without
// the "Standard_" prefix. Returned pointers live as long as the catalog.
class Catalog {
public:
    // Loads <dir>/models/*.yaml and <dir>/hardware/{gpus,vms}.yaml; the first
    // bad file fails the load with its file and field.
    static common::Result<Catalog> load(const std::string& presetsDir);
    static common::Result<Catalog> loadDefault(); // load(defaultPresetsDir())

    const std::vector<model::ModelSpec>& models() const { return m_models; }
    const std::vector<GpuSpec>& gpus() const { return m_gpus; }
    const std::vector<VmSize>& vms() const { return m_vms; }

    const model::ModelSpec* findModel(std::string_view nameOrRepoId) const;
    const GpuSpec* findGpu(std::string_view idOrAlias) const;
    const VmSize* findVm(std::string_view name) const;
    // The GPU whose device_names hold what CUDA calls a device
    // ("NVIDIA H100 80GB HBM3"), ignoring case and surrounding spaces.
    const GpuSpec* findGpuByDeviceName(std::string_view deviceName) const;

    // Nearest names for "did you mean", best first.
    std::vector<std::string> suggestModels(std::string_view query, size_t count = 3) const;
    std::vector<std::string> suggestGpus(std::string_view query, size_t count = 3) const;
    std::vector<std::string> suggestVms(std::string_view query, size_t count = 3) const;

    // A preset by name/repo id, or an HF config.json (file or folder) when
    // `model` names an existing path, or a Hub id's in the local Hugging Face
    // cache (common/hub_cache.h). Unknown names fail with suggestions.
    common::Result<model::ModelSpec> resolveModel(const std::string& model) const;

    std::string presetsDir() const { return m_dir; }

private:
    std::string m_dir;
    std::vector<model::ModelSpec> m_models;
    std::vector<GpuSpec> m_gpus;
    std::vector<VmSize> m_vms;
};

} // namespace tb::plan
