#include "plan/calibration.h"

#include "common/atomic_file.h"
#include "common/json_document.h"
#include "common/units.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace tb::plan {

using nlohmann::json;

namespace {

constexpr const char* kSchema = "tunebench.calibration/1";

double median(std::vector<double> values)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

json runToJson(const CalibrationRun& r)
{
    return {{"run_dir", r.runDir}, {"run_id", r.runId},
        {"planned_tokens_per_second", r.plannedTokensPerSecond},
        {"measured_tokens_per_second", r.measuredTokensPerSecond},
        {"planned_utilisation", r.plannedUtilisation}, {"peak", peakKey(r.peak)},
        {"planned_peak_bytes", r.plannedPeakBytes}, {"measured_peak_bytes", r.measuredPeakBytes},
        {"planned_allocated_bytes", r.plannedAllocatedBytes},
        {"planned_transient_bytes", r.plannedTransientBytes},
        {"measured_reserve_bytes", r.measuredReserveBytes}};
}

// Reads a field, naming the file and the path of the field when it is wrong.
template <typename T> T field(const json& object, const char* key, const std::string& where)
{
    const auto it = object.find(key);
    if (it == object.end())
        throw std::runtime_error(where + "." + key + ": missing");
    try {
        return it->get<T>();
    } catch (const json::exception&) {
        throw std::runtime_error(where + "." + key + ": got " + common::shownJson(*it)
            + ", expected a " + (std::is_same_v<T, std::string> ? "string" : "number"));
    }
}

CalibrationRun runFromJson(const json& j, const std::string& where)
{
    CalibrationRun r;
    r.runDir = field<std::string>(j, "run_dir", where);
    r.runId = field<std::string>(j, "run_id", where);
    r.plannedTokensPerSecond = field<double>(j, "planned_tokens_per_second", where);
    r.measuredTokensPerSecond = field<double>(j, "measured_tokens_per_second", where);
    r.plannedUtilisation = field<double>(j, "planned_utilisation", where);
    const std::string peak = field<std::string>(j, "peak", where);
    for (PeakLevel level : {PeakLevel::Allocated, PeakLevel::Reserved, PeakLevel::Device})
        if (peakKey(level) == peak)
            r.peak = level;
    r.plannedPeakBytes = field<double>(j, "planned_peak_bytes", where);
    r.measuredPeakBytes = field<double>(j, "measured_peak_bytes", where);
    r.plannedAllocatedBytes = field<double>(j, "planned_allocated_bytes", where);
    r.plannedTransientBytes = field<double>(j, "planned_transient_bytes", where);
    r.measuredReserveBytes = field<double>(j, "measured_reserve_bytes", where);
    return r;
}

} // namespace

std::string DeviceCalibration::note() const
{
    return "calibrated by " + std::to_string(runs.size()) + " run" + (runs.size() == 1 ? "" : "s")
        + " on " + gpuId;
}

const DeviceCalibration* Calibration::find(const std::string& gpuId) const
{
    for (const DeviceCalibration& d : devices)
        if (d.gpuId == gpuId)
            return &d;
    return nullptr;
}

void Calibration::set(DeviceCalibration device)
{
    for (DeviceCalibration& d : devices)
        if (d.gpuId == device.gpuId) {
            d = std::move(device);
            return;
        }
    devices.push_back(std::move(device));
}

CalibrationRun calibrationRun(const PlanResult& plan, double utilisation)
{
    CalibrationRun r;
    r.plannedTokensPerSecond = plan.tokensPerSecond;
    r.plannedUtilisation = utilisation;
    r.plannedAllocatedBytes = plan.stepPeakAt(PeakLevel::Allocated);
    r.plannedTransientBytes = plan.categoryBytes(MemoryCategory::Activations)
        + plan.categoryBytes(MemoryCategory::Logits) + plan.categoryBytes(MemoryCategory::Buffers);
    return r;
}

DeviceCalibration calibrateDevice(const std::string& gpuId, std::vector<CalibrationRun> runs)
{
    DeviceCalibration d;
    d.gpuId = gpuId;
    std::vector<double> utilisations, reserves, runtimes;
    for (const CalibrationRun& r : runs) {
        // A step that is mostly compute scales with utilisation.
        if (r.plannedTokensPerSecond > 0 && r.measuredTokensPerSecond > 0)
            utilisations.push_back(
                r.plannedUtilisation * r.measuredTokensPerSecond / r.plannedTokensPerSecond);
        if (r.measuredReserveBytes >= 0 && r.plannedTransientBytes > 0)
            reserves.push_back(r.measuredReserveBytes / r.plannedTransientBytes);
        if (r.peak == PeakLevel::Device && r.measuredPeakBytes > r.plannedAllocatedBytes)
            runtimes.push_back(r.measuredPeakBytes - r.plannedAllocatedBytes);
    }
    d.runtimeBytes = median(runtimes);
    d.utilisation = std::min(1.0, median(utilisations));
    d.allocatorOverhead = std::min(1.0, median(reserves));
    d.runs = std::move(runs);
    return d;
}

std::string applyCalibration(
    const Calibration& calibration, const std::string& gpuId, PlanInput& input)
{
    const DeviceCalibration* d = calibration.find(gpuId);
    if (!d)
        return {};
    bool applied = false;
    if (input.utilisationOverride <= 0 && d->utilisation > 0) {
        input.utilisationOverride = d->utilisation;
        applied = true;
    }
    if (input.allocatorOverhead <= 0 && d->allocatorOverhead > 0) {
        input.allocatorOverhead = d->allocatorOverhead;
        applied = true;
    }
    if (input.cudaContextGiB <= 0 && d->runtimeBytes > 0) {
        input.cudaContextGiB = d->runtimeBytes / common::kGiB;
        applied = true;
    }
    if (applied)
        input.calibrationNote = d->note();
    return input.calibrationNote;
}

std::string defaultCalibrationPath()
{
    if (const char* path = std::getenv("TUNEBENCH_CALIBRATION"); path && *path)
        return path;
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
        return std::string(xdg) + "/tunebench/calibration.json";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.config/tunebench/calibration.json";
    return {};
}

common::Result<Calibration> loadCalibration(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        return Calibration{};
    try {
        // A calibration file may come from another machine: bounded.
        const json root = common::parseJsonDocument(
            std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
        if (field<std::string>(root, "schema", "(top)") != kSchema)
            throw std::runtime_error(std::string("schema: expected \"") + kSchema + "\"");
        Calibration c;
        for (const json& d : root.at("devices")) {
            DeviceCalibration device;
            device.gpuId = field<std::string>(d, "gpu", "devices[]");
            const std::string where = "devices[" + device.gpuId + "]";
            device.utilisation = field<double>(d, "utilisation", where);
            device.allocatorOverhead = field<double>(d, "allocator_overhead", where);
            device.runtimeBytes = field<double>(d, "runtime_bytes", where);
            for (const json& r : d.at("runs"))
                device.runs.push_back(runFromJson(r, where + ".runs[]"));
            c.devices.push_back(std::move(device));
        }
        return c;
    } catch (const std::exception& e) {
        return common::Error::at(path, {}, std::string("not a calibration file: ") + e.what());
    }
}

common::Status saveCalibration(const std::string& path, const Calibration& calibration)
{
    json devices = json::array();
    for (const DeviceCalibration& d : calibration.devices) {
        json runs = json::array();
        for (const CalibrationRun& r : d.runs)
            runs.push_back(runToJson(r));
        devices.push_back({{"gpu", d.gpuId}, {"utilisation", d.utilisation},
            {"allocator_overhead", d.allocatorOverhead}, {"runtime_bytes", d.runtimeBytes},
            {"note", d.note()}, {"runs", runs}});
    }
    std::error_code ignored; // writeFileAtomic names the folder if it is still missing
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
    return common::writeFileAtomic(
        path, json{{"schema", kSchema}, {"devices", devices}}.dump(2) + "\n");
}

} // namespace tb::plan
