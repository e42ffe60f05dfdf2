#include "plan/hardware.h"

#include "common/text.h"
#include "common/units.h"
#include "model/yaml_fields.h"

#include <set>

namespace tb::plan {

using model::YamlFields;

double GpuSpec::usableBytes() const
{
    return usableGiB * common::kGiB;
}

namespace {

common::Error problemsError(const std::vector<std::string>& problems)
{
    return common::Error{model::joinProblems(problems), {}};
}

YAML::Node topLevelList(const YAML::Node& root, const char* key, const std::string& origin,
    std::vector<std::string>* problems)
{
    YamlFields top(root, origin, {}, problems);
    top.integer("version", true, 1, 1);
    top.child("price_sources", false); // documentation for humans: price_source names these
    const YAML::Node list = top.child(key, true);
    top.finish();
    if (list.IsDefined() && !list.IsSequence()) {
        top.problem(list, key, "expected a list");
        return YAML::Node(YAML::NodeType::Undefined);
    }
    return list;
}

GpuSpec readGpu(YamlFields& f)
{
    GpuSpec gpu;
    gpu.id = f.text("id", true).value_or("");
    gpu.name = f.text("name", true).value_or("");
    gpu.aliases = f.textList("aliases", false);
    gpu.vendor = f.text("vendor", true).value_or("");
    gpu.architecture = f.text("architecture", false).value_or("");
    gpu.memoryGiB = f.number("memory_gib", true, 0.25, 65536).value_or(0);
    gpu.usableGiB = f.number("usable_gib", true, 0.25, 65536).value_or(0);
    gpu.usableNote = f.text("usable_note", true).value_or("");
    gpu.bf16Supported = f.boolean("bf16", true).value_or(false);
    gpu.bf16Tflops = f.number("bf16_tflops", true, 0, 1e6).value_or(0);
    gpu.fp16Tflops = f.number("fp16_tflops", true, 0, 1e6).value_or(0);
    gpu.tf32Tflops = f.number("tf32_tflops", false, 0, 1e6).value_or(0);
    gpu.fp32Tflops = f.number("fp32_tflops", true, 0, 1e6).value_or(0);
    gpu.memBandwidthGBps = f.number("mem_bandwidth_gbps", true, 0, 1e6).value_or(0);
    gpu.linkGBps = f.number("link_gbps", true, 0, 1e6).value_or(0);
    gpu.linkKind = f.text("link_kind", true).value_or("");
    gpu.hostLinkGBps = f.number("host_link_gbps", true, 0, 1e6).value_or(0);
    f.child("utilisation", true); // read by the caller, which knows the entry's path
    gpu.sources = f.textList("sources", true);
    if (gpu.usableGiB > gpu.memoryGiB && gpu.memoryGiB > 0)
        f.problem(f.child("usable_gib", false), "usable_gib",
            "is more than memory_gib (" + std::to_string(gpu.memoryGiB) + ")");
    return gpu;
}

} // namespace

common::Result<std::vector<GpuSpec>> parseGpuPresets(
    std::string_view yaml, const std::string& origin)
{
    std::vector<std::string> problems;
    const YAML::Node root = model::loadYaml(std::string(yaml), origin, &problems);
    if (!problems.empty())
        return problemsError(problems);
    const YAML::Node list = topLevelList(root, "gpus", origin, &problems);
    std::vector<GpuSpec> gpus;
    std::set<std::string> names;
    for (size_t i = 0; list.IsDefined() && i < list.size(); ++i) {
        const YAML::Node entry = list[i];
        YamlFields f(entry, origin, "gpus[" + std::to_string(i) + "]", &problems);
        GpuSpec gpu = readGpu(f);
        const YAML::Node util = f.child("utilisation", false);
        if (util.IsDefined()) {
            YamlFields u(util, origin, "gpus[" + std::to_string(i) + "].utilisation", &problems);
            gpu.utilisation.full = u.number("full", true, 0.01, 1).value_or(0.4);
            gpu.utilisation.lora = u.number("lora", true, 0.01, 1).value_or(0.35);
            gpu.utilisation.qlora = u.number("qlora", true, 0.01, 1).value_or(0.25);
            gpu.utilisation.note = u.text("note", true).value_or("");
            u.finish();
        }
        f.finish();
        std::set<std::string> own; // an alias may repeat the id in another case
        own.insert(common::toLower(gpu.id));
        for (const std::string& alias : gpu.aliases)
            own.insert(common::toLower(alias));
        for (const std::string& name : own)
            if (!names.insert(name).second)
                f.problem(entry, "id", "'" + name + "' names two GPUs (duplicate id or alias)");
        gpus.push_back(std::move(gpu));
    }
    if (!problems.empty())
        return problemsError(problems);
    return gpus;
}

common::Result<std::vector<VmSize>> parseVmPresets(
    std::string_view yaml, const std::string& origin, const std::vector<GpuSpec>& gpus)
{
    std::vector<std::string> problems;
    const YAML::Node root = model::loadYaml(std::string(yaml), origin, &problems);
    if (!problems.empty())
        return problemsError(problems);
    const YAML::Node list = topLevelList(root, "vms", origin, &problems);
    std::vector<VmSize> vms;
    std::set<std::string> names;
    for (size_t i = 0; list.IsDefined() && i < list.size(); ++i) {
        const YAML::Node entry = list[i];
        YamlFields f(entry, origin, "vms[" + std::to_string(i) + "]", &problems);
        VmSize vm;
        vm.name = f.text("name", true).value_or("");
        vm.series = f.text("series", true).value_or("");
        vm.status = f.text("status", true).value_or("ga");
        if (vm.status != "ga" && vm.status != "retired" && vm.status != "preview")
            f.problem(f.child("status", false), "status",
                "got '" + vm.status + "', expected ga, retired or preview");
        vm.statusNote = f.text("status_note", false).value_or("");
        vm.gpuId = f.text("gpu", true).value_or("");
        vm.gpusPerVm = int(f.integer("gpus_per_vm", true, 1, 64).value_or(1));
        if (const auto fraction = f.number("gpu_fraction", false, 0.01, 1)) {
            vm.gpuFraction = *fraction;
            vm.fractionalGpu = *fraction < 1.0;
        }
        vm.vcpus = int(f.integer("vcpus", true, 1, 100000).value_or(0));
        vm.ramGiB = f.number("ram_gib", true, 1, 1e7).value_or(0);
        vm.intraLinkGBps = f.number("intra_link_gbps", true, 0, 1e6).value_or(0);
        vm.intraLinkNote = f.text("intra_link_note", false).value_or("");
        vm.interconnect = f.text("interconnect", false).value_or("");
        vm.interNodeGbpsPerGpu = f.number("ib_gbps_per_gpu", true, 0, 1e6).value_or(0);
        vm.frontendGbps = f.number("frontend_gbps", true, 0, 1e6).value_or(0);
        const YAML::Node price = f.child("price_usd_per_hour", true);
        if (price.IsDefined() && !price.IsNull())
            vm.usdPerHour = f.number("price_usd_per_hour", false, 0.0001, 1e6);
        vm.priceRegion = f.text("price_region", false).value_or("");
        vm.priceAsOf = f.text("price_as_of", false).value_or("");
        vm.priceSource = f.text("price_source", true).value_or("");
        vm.notes = f.textList("notes", false);
        vm.sources = f.textList("sources", true);
        f.finish();
        bool known = false;
        for (const GpuSpec& gpu : gpus)
            known = known || gpu.id == vm.gpuId;
        if (!known)
            f.problem(entry, "gpu", "'" + vm.gpuId + "' is not a GPU in gpus.yaml");
        if (!names.insert(common::toLower(vm.name)).second)
            f.problem(entry, "name", "'" + vm.name + "' is listed twice");
        vms.push_back(std::move(vm));
    }
    if (!problems.empty())
        return problemsError(problems);
    return vms;
}

} // namespace tb::plan
