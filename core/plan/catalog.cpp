#include "plan/catalog.h"

#include "common/hub_cache.h"

#include "common/text.h"
#include "model/hf_config.h"
#include "model/model_preset.h"
#include "plan/presets_dirs.h"
#include "yaml/map_reader.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

namespace tb::plan {

namespace fs = std::filesystem;

namespace {

bool isPresetsDir(const fs::path& dir)
{
    std::error_code ec;
    return fs::is_directory(dir / "models", ec)
        && fs::is_regular_file(dir / "hardware" / "gpus.yaml", ec);
}

// "Standard_ND96asr_v4" and "ND96asr_v4" name the same size.
std::string vmKey(std::string_view name)
{
    std::string lower = common::toLower(common::trim(name));
    if (lower.rfind("standard_", 0) == 0)
        lower.erase(0, 9);
    return lower;
}

} // namespace

std::string defaultPresetsDir()
{
    std::error_code ec;
    if (const char* env = std::getenv("TUNEBENCH_PRESETS_DIR"); env && *env)
        return env;
    // An installed binary finds <prefix>/share/tunebench/presets beside its bin/.
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const fs::path installed =
            exe.parent_path().parent_path() / "share" / "tunebench" / "presets";
        if (isPresetsDir(installed))
            return installed.string();
    }
    if (isPresetsDir(sourcePresetsDir()))
        return sourcePresetsDir();
    if (isPresetsDir(installedPresetsDir()))
        return installedPresetsDir();
    return {};
}

common::Result<Catalog> Catalog::loadDefault()
{
    const std::string dir = defaultPresetsDir();
    if (dir.empty())
        return common::Error{"presets: no presets folder found",
            "set TUNEBENCH_PRESETS_DIR to the folder holding models/ and hardware/"};
    return load(dir);
}

common::Result<Catalog> Catalog::load(const std::string& presetsDir)
{
    Catalog catalog;
    catalog.m_dir = presetsDir;
    const fs::path root(presetsDir);
    if (!isPresetsDir(root))
        return common::Error::at(
            presetsDir, {}, "not a presets folder (expected models/ and hardware/gpus.yaml)");

    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root / "models", ec))
        if (entry.is_regular_file() && entry.path().extension() == ".yaml")
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    std::map<std::string, std::string> owner; // lower-case name/alias/repo -> file
    for (const fs::path& file : files) {
        common::Result<model::ModelSpec> spec = model::loadModelPreset(file.string());
        if (!spec)
            return spec.error();
        std::vector<std::string> keys = spec->aliases;
        keys.push_back(spec->name);
        if (!spec->hfRepoId.empty())
            keys.push_back(spec->hfRepoId);
        for (const std::string& key : keys) {
            const std::string lower = common::toLower(key);
            const auto [it, inserted] = owner.emplace(lower, file.filename().string());
            if (!inserted && it->second != file.filename().string())
                return common::Error::at(file.string(), "name",
                    "'" + key + "' also names the preset in " + it->second + " (duplicate)");
        }
        catalog.m_models.push_back(std::move(spec).value());
    }

    const std::string gpuFile = (root / "hardware" / "gpus.yaml").string();
    const common::Result<std::string> gpuText = yaml::readYamlFile(gpuFile);
    if (!gpuText)
        return gpuText.error();
    common::Result<std::vector<GpuSpec>> gpus = parseGpuPresets(*gpuText, gpuFile);
    if (!gpus)
        return gpus.error();
    catalog.m_gpus = std::move(gpus).value();

    const std::string vmFile = (root / "hardware" / "vms.yaml").string();
    const common::Result<std::string> vmText = yaml::readYamlFile(vmFile);
    if (!vmText)
        return vmText.error();
    common::Result<std::vector<VmSize>> vms = parseVmPresets(*vmText, vmFile, catalog.m_gpus);
    if (!vms)
        return vms.error();
    catalog.m_vms = std::move(vms).value();
    return catalog;
}

const model::ModelSpec* Catalog::findModel(std::string_view nameOrRepoId) const
{
    const std::string query = common::toLower(common::trim(nameOrRepoId));
    if (query.empty())
        return nullptr;
    for (const model::ModelSpec& spec : m_models) {
        if (common::toLower(spec.name) == query || common::toLower(spec.hfRepoId) == query)
            return &spec;
        for (const std::string& alias : spec.aliases)
            if (common::toLower(alias) == query)
                return &spec;
    }
    return nullptr;
}

const GpuSpec* Catalog::findGpu(std::string_view idOrAlias) const
{
    const std::string query = common::toLower(common::trim(idOrAlias));
    for (const GpuSpec& gpu : m_gpus) {
        if (common::toLower(gpu.id) == query)
            return &gpu;
        for (const std::string& alias : gpu.aliases)
            if (common::toLower(alias) == query)
                return &gpu;
    }
    return nullptr;
}

const GpuSpec* Catalog::findGpuByDeviceName(std::string_view deviceName) const
{
    const std::string query = common::toLower(common::trim(deviceName));
    for (const GpuSpec& gpu : m_gpus)
        for (const std::string& name : gpu.deviceNames)
            if (common::toLower(name) == query)
                return &gpu;
    return nullptr;
}

const VmSize* Catalog::findVm(std::string_view name) const
{
    const std::string query = vmKey(name);
    for (const VmSize& vm : m_vms)
        if (vmKey(vm.name) == query)
            return &vm;
    return nullptr;
}

std::vector<std::string> Catalog::suggestModels(std::string_view query, size_t count) const
{
    std::vector<std::string> names;
    for (const model::ModelSpec& spec : m_models)
        names.push_back(spec.name);
    return common::nearestNames(names, query, count);
}

std::vector<std::string> Catalog::suggestGpus(std::string_view query, size_t count) const
{
    std::vector<std::string> names;
    for (const GpuSpec& gpu : m_gpus)
        names.push_back(gpu.id);
    return common::nearestNames(names, query, count);
}

std::vector<std::string> Catalog::suggestVms(std::string_view query, size_t count) const
{
    std::vector<std::string> names;
    for (const VmSize& vm : m_vms)
        names.push_back(vm.name);
    return common::nearestNames(names, query, count);
}

common::Result<model::ModelSpec> Catalog::resolveModel(const std::string& model) const
{
    std::error_code ec;
    const fs::path path(model);
    if (!model.empty() && fs::exists(path, ec))
        return model::readHfConfig(model);
    if (const model::ModelSpec* spec = findModel(model))
        return *spec;
    if (path.extension() == ".json")
        return common::Error::at(model, {}, "no such file");
    // A Hub id no preset has: its config.json in the local Hub cache.
    if (common::looksLikeHubId(model)) {
        const common::Result<std::string> cached = common::findCachedModel(model);
        if (!cached)
            return cached.error();
        return model::readHfConfig(*cached);
    }
    std::string hint;
    for (const std::string& name : suggestModels(model))
        hint += (hint.empty() ? "did you mean " : ", ") + name;
    if (!hint.empty())
        hint += "? (or give the path of a config.json)";
    return common::Error{"model: unknown preset '" + model + "'", hint};
}

} // namespace tb::plan
