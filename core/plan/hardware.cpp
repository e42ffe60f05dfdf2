#include "plan/hardware.h"

#include "common/text.h"
#include "common/units.h"
#include "yaml/map_reader.h"

#include <set>

namespace tb::plan {

double GpuSpec::usableBytes() const
{
    return usableGiB * common::kGiB;
}

namespace {

using yaml::MapReader;

// The document's top level: a version, price_sources (documentation for
// humans: price_source names these) and the list under `key`.
std::optional<YAML::Node> topLevelList(
    const YAML::Node& root, const char* key, yaml::ProblemList& problems)
{
    MapReader top(root, {}, problems);
    top.require({"version", key});
    int version = 1;
    top.integer("version", version, 1, 1);
    top.value("price_sources");
    const std::optional<YAML::Node> list = top.sequence(key);
    top.checkKeys();
    return list;
}

void readUtilisation(MapReader& f, GpuSpec& gpu, yaml::ProblemList& problems)
{
    const std::optional<YAML::Node> node = f.section("utilisation");
    if (!node)
        return;
    MapReader u(*node, f.pathOf("utilisation"), problems);
    u.require({"full", "lora", "qlora", "note"});
    u.number("full", gpu.utilisation.full, 0.01, 1);
    u.number("lora", gpu.utilisation.lora, 0.01, 1);
    u.number("qlora", gpu.utilisation.qlora, 0.01, 1);
    u.string("note", gpu.utilisation.note);
    u.checkKeys();
}

GpuSpec readGpu(MapReader& f, yaml::ProblemList& problems)
{
    f.require({"id", "name", "vendor", "memory_gib", "usable_gib", "usable_note", "bf16",
        "bf16_tflops", "fp16_tflops", "fp32_tflops", "mem_bandwidth_gbps", "link_gbps", "link_kind",
        "host_link_gbps", "utilisation", "sources"});
    GpuSpec gpu;
    f.string("id", gpu.id);
    f.string("name", gpu.name);
    f.stringList("aliases", gpu.aliases);
    f.stringList("device_names", gpu.deviceNames);
    f.string("vendor", gpu.vendor);
    f.string("architecture", gpu.architecture);
    f.number("memory_gib", gpu.memoryGiB, 0.25, 65536);
    f.number("usable_gib", gpu.usableGiB, 0.25, 65536);
    f.string("usable_note", gpu.usableNote);
    f.boolean("bf16", gpu.bf16Supported);
    f.number("bf16_tflops", gpu.bf16Tflops, 0, 1e6);
    f.number("fp16_tflops", gpu.fp16Tflops, 0, 1e6);
    f.number("tf32_tflops", gpu.tf32Tflops, 0, 1e6);
    f.number("fp32_tflops", gpu.fp32Tflops, 0, 1e6);
    f.number("mem_bandwidth_gbps", gpu.memBandwidthGBps, 0, 1e6);
    f.number("link_gbps", gpu.linkGBps, 0, 1e6);
    f.string("link_kind", gpu.linkKind);
    f.number("host_link_gbps", gpu.hostLinkGBps, 0, 1e6);
    readUtilisation(f, gpu, problems);
    f.stringList("sources", gpu.sources);
    if (gpu.usableGiB > gpu.memoryGiB && gpu.memoryGiB > 0)
        f.report("usable_gib", "is more than memory_gib (" + std::to_string(gpu.memoryGiB) + ")");
    return gpu;
}

VmSize readVm(MapReader& f)
{
    f.require(
        {"name", "series", "status", "gpu", "gpus_per_vm", "vcpus", "ram_gib", "intra_link_gbps",
            "ib_gbps_per_gpu", "frontend_gbps", "price_usd_per_hour", "price_source", "sources"});
    VmSize vm;
    f.string("name", vm.name);
    f.string("series", vm.series);
    vm.status = "ga";
    f.choice("status", vm.status,
        [](std::string_view text) {
            return text == "ga" || text == "retired" || text == "preview"
                ? std::optional<std::string>(text)
                : std::nullopt;
        },
        {"ga", "retired", "preview"});
    f.string("status_note", vm.statusNote);
    f.string("gpu", vm.gpuId);
    f.integer("gpus_per_vm", vm.gpusPerVm, 1, 64);
    double fraction = 1.0;
    if (f.number("gpu_fraction", fraction, 0.01, 1)) {
        vm.gpuFraction = fraction;
        vm.fractionalGpu = fraction < 1.0;
    }
    f.integer("vcpus", vm.vcpus, 1, 100000);
    f.number("ram_gib", vm.ramGiB, 1, 1e7);
    f.number("intra_link_gbps", vm.intraLinkGBps, 0, 1e6);
    f.string("intra_link_note", vm.intraLinkNote);
    f.string("interconnect", vm.interconnect);
    f.number("ib_gbps_per_gpu", vm.interNodeGbpsPerGpu, 0, 1e6);
    f.number("frontend_gbps", vm.frontendGbps, 0, 1e6);
    double price = 0;
    // null: no published price.
    if (!f.value("price_usd_per_hour").IsNull()
        && f.number("price_usd_per_hour", price, 0.0001, 1e6))
        vm.usdPerHour = price;
    f.string("price_region", vm.priceRegion);
    f.string("price_as_of", vm.priceAsOf);
    f.string("price_source", vm.priceSource);
    f.stringList("notes", vm.notes);
    f.stringList("sources", vm.sources);
    const auto spelled = [](std::string_view cuda, std::string_view other) {
        return [cuda, other](std::string_view text) -> std::optional<bool> {
            if (text == cuda)
                return false;
            if (text == other)
                return true;
            return std::nullopt;
        };
    };
    f.choice("software_stack", vm.rocm, spelled("cuda", "rocm"), {"cuda", "rocm"});
    f.choice("host_arch", vm.arm64Host, spelled("x86_64", "arm64"), {"x86_64", "arm64"});
    return vm;
}

} // namespace

common::Result<std::vector<GpuSpec>> parseGpuPresets(
    std::string_view yaml, const std::string& origin)
{
    yaml::ProblemList problems;
    const YAML::Node root = yaml::load(std::string(yaml), problems);
    if (!problems.isEmpty())
        return problems.toError(origin);
    const std::optional<YAML::Node> list = topLevelList(root, "gpus", problems);
    std::vector<GpuSpec> gpus;
    std::set<std::string> names;
    std::set<std::string> deviceNames;
    for (size_t i = 0; list && i < list->size(); ++i) {
        MapReader f((*list)[i], "gpus[" + std::to_string(i) + "]", problems);
        GpuSpec gpu = readGpu(f, problems);
        for (const std::string& name : gpu.deviceNames)
            if (!deviceNames.insert(common::toLower(name)).second)
                f.report("device_names", "'" + name + "' names two GPUs");
        f.checkKeys();
        std::set<std::string> own; // an alias may repeat the id in another case
        own.insert(common::toLower(gpu.id));
        for (const std::string& alias : gpu.aliases)
            own.insert(common::toLower(alias));
        for (const std::string& name : own)
            if (!names.insert(name).second)
                f.report("id", "'" + name + "' names two GPUs (duplicate id or alias)");
        gpus.push_back(std::move(gpu));
    }
    if (!problems.isEmpty())
        return problems.toError(origin);
    return gpus;
}

common::Result<std::vector<VmSize>> parseVmPresets(
    std::string_view yaml, const std::string& origin, const std::vector<GpuSpec>& gpus)
{
    yaml::ProblemList problems;
    const YAML::Node root = yaml::load(std::string(yaml), problems);
    if (!problems.isEmpty())
        return problems.toError(origin);
    const std::optional<YAML::Node> list = topLevelList(root, "vms", problems);
    std::vector<VmSize> vms;
    std::set<std::string> names;
    for (size_t i = 0; list && i < list->size(); ++i) {
        MapReader f((*list)[i], "vms[" + std::to_string(i) + "]", problems);
        VmSize vm = readVm(f);
        f.checkKeys();
        bool known = false;
        for (const GpuSpec& gpu : gpus)
            known = known || gpu.id == vm.gpuId;
        if (!known)
            f.report("gpu", "'" + vm.gpuId + "' is not a GPU in gpus.yaml");
        if (!names.insert(common::toLower(vm.name)).second)
            f.report("name", "'" + vm.name + "' is listed twice");
        vms.push_back(std::move(vm));
    }
    if (!problems.isEmpty())
        return problems.toError(origin);
    return vms;
}

} // namespace tb::plan
