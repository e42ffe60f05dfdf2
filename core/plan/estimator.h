#pragma once

#include "common/error.h"
#include "model/model_spec.h"
#include "plan/hardware.h"
#include "plan/plan_input.h"
#include "plan/plan_result.h"

#include <optional>
#include <vector>

namespace tb::plan {

class Catalog;

struct EstimateOptions {
    // Explanations cost most of an estimate's time; sweeps switch them off.
    // Without them the memory components keep key, category and bytes (no
    // label, explanation or source), `figures` stays empty, and every
    // headline field (perGpuBytes, fits, tokensPerSecond, hours, costUsd...)
    // is set as usual.
    bool explain = true;
};

// The plan for `input` on `gpu` (and `vm` when planning for an Azure size:
// links, price, RAM). Pure and fast (well under 10 us): no I/O, no lookup.
// input.gpu / input.vmSize are ignored here (resolved by planFromCatalog);
// input.gpusPerNode <= 0 means all of the VM's GPUs. The input is assumed
// valid (validatePlanInput); out-of-range values are clamped, never UB.
PlanResult estimatePlan(const PlanInput& input, const model::ModelSpec& model, const GpuSpec& gpu,
    const VmSize* vm = nullptr, const EstimateOptions& options = {});

// Checks what needs the model: LoRA target names exist in its blocks.
common::Status validateForModel(const PlanInput& input, const model::ModelSpec& model);

// The GPU and VM a plan names, looked up in the catalog: vm_size sets the GPU
// and caps gpus_per_node; gpu alone plans a bare GPU (no price, no links).
struct ResolvedHardware {
    const GpuSpec* gpu = nullptr;
    const VmSize* vm = nullptr; // null for a bare GPU
};
common::Result<ResolvedHardware> resolveHardware(const PlanInput& input, const Catalog& catalog);

// Validates the input, resolves the model (preset or config.json), the VM
// and the GPU in the catalog, and estimates. Errors name the field.
common::Result<PlanResult> planFromCatalog(
    const PlanInput& input, const Catalog& catalog, const EstimateOptions& options = {});

// Memory and speed as one input varies, for what-if charts.
enum class SweepAxis { MicroBatch, SeqLen, GpuCount };

struct SweepPoint {
    long long value = 0; // the swept input's value
    double perGpuBytes = 0;
    double categoryBytes[kMemoryCategoryCount] = {};
    double usableBytes = 0;
    bool fits = false;
    double tokensPerSecond = 0;
    double stepSeconds = 0;
};

// GpuCount varies gpusPerNode up to the VM's GPU count, then whole nodes
// (value = total GPUs; values that are not a whole number of nodes above one
// node are skipped).
std::vector<SweepPoint> sweepPlan(const PlanInput& input, const model::ModelSpec& model,
    const GpuSpec& gpu, const VmSize* vm, SweepAxis axis, const std::vector<long long>& values);

// The largest micro-batch in [1, limit] that fits, or nullopt when even 1 does not.
std::optional<int> largestFittingMicroBatch(const PlanInput& input, const model::ModelSpec& model,
    const GpuSpec& gpu, const VmSize* vm, int limit = 1024);

// Tokens/s and efficiency from 1 node to maxNodes (same VM, same strategy).
std::vector<ScalingPoint> scalingCurve(const PlanInput& input, const model::ModelSpec& model,
    const GpuSpec& gpu, const VmSize* vm, int maxNodes);

} // namespace tb::plan
