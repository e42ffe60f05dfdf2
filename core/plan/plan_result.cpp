#include "plan/plan_result.h"

#include <algorithm>

namespace tb::plan {

PeakLevel peakLevel(std::string_view componentKey)
{
    if (componentKey == "allocator_slack")
        return PeakLevel::Reserved;
    if (componentKey == "cuda_context" || componentKey == "nccl_buffers"
        || componentKey == "process_runtime")
        return PeakLevel::Device;
    return PeakLevel::Allocated;
}

std::string_view phaseKey(Phase phase)
{
    switch (phase) {
    case Phase::Load:
        return "load";
    case Phase::Step:
        return "step";
    case Phase::OptimizerStep:
        return "optimizer_step";
    case Phase::Evaluation:
        return "evaluation";
    case Phase::Checkpoint:
        return "checkpoint";
    case Phase::Export:
        return "export";
    }
    return "?";
}

std::string_view phaseLabel(Phase phase)
{
    switch (phase) {
    case Phase::Load:
        return "Load";
    case Phase::Step:
        return "Forward and backward";
    case Phase::OptimizerStep:
        return "Optimizer step";
    case Phase::Evaluation:
        return "Evaluation";
    case Phase::Checkpoint:
        return "Checkpoint";
    case Phase::Export:
        return "Export";
    }
    return "?";
}

double PlanResult::stepPeakAt(PeakLevel level) const
{
    double peak = peaks.at(level);
    for (const PhasePeak& p : phases)
        if (p.phase == Phase::OptimizerStep)
            peak = std::max(peak, level == PeakLevel::Device ? p.bytes : p.allocated);
    return peak;
}

const PhasePeak* PlanResult::peakPhase() const
{
    const PhasePeak* peak = nullptr;
    for (const PhasePeak& p : phases)
        if (!peak || p.bytes > peak->bytes)
            peak = &p;
    return peak;
}

std::string_view peakKey(PeakLevel level)
{
    switch (level) {
    case PeakLevel::Allocated:
        return "peak_allocated";
    case PeakLevel::Reserved:
        return "peak_reserved";
    case PeakLevel::Device:
        return "device_used";
    }
    return "?";
}

std::string_view peakLabel(PeakLevel level)
{
    switch (level) {
    case PeakLevel::Allocated:
        return "Peak allocated";
    case PeakLevel::Reserved:
        return "Peak reserved";
    case PeakLevel::Device:
        return "Device used";
    }
    return "?";
}

double PeakBytes::at(PeakLevel level) const
{
    switch (level) {
    case PeakLevel::Allocated:
        return allocated;
    case PeakLevel::Reserved:
        return reserved;
    case PeakLevel::Device:
        return deviceUsed;
    }
    return deviceUsed;
}

PeakBytes peaksOf(const std::vector<MemoryComponent>& memory)
{
    double byLevel[3] = {};
    for (const MemoryComponent& c : memory)
        byLevel[int(peakLevel(c.key))] += c.bytes;
    PeakBytes p;
    p.allocated = byLevel[0];
    p.reserved = p.allocated + byLevel[1];
    p.deviceUsed = p.reserved + byLevel[2];
    return p;
}

std::string_view categoryKey(MemoryCategory c)
{
    switch (c) {
    case MemoryCategory::Weights:
        return "weights";
    case MemoryCategory::Gradients:
        return "gradients";
    case MemoryCategory::Optimizer:
        return "optimizer";
    case MemoryCategory::Activations:
        return "activations";
    case MemoryCategory::Logits:
        return "logits";
    case MemoryCategory::Buffers:
        return "buffers";
    case MemoryCategory::Overhead:
        return "overhead";
    }
    return "?";
}

std::string_view categoryLabel(MemoryCategory c)
{
    switch (c) {
    case MemoryCategory::Weights:
        return "Weights";
    case MemoryCategory::Gradients:
        return "Gradients";
    case MemoryCategory::Optimizer:
        return "Optimizer states";
    case MemoryCategory::Activations:
        return "Activations";
    case MemoryCategory::Logits:
        return "Logits and loss";
    case MemoryCategory::Buffers:
        return "Communication buffers";
    case MemoryCategory::Overhead:
        return "CUDA context + allocator";
    }
    return "?";
}

double PlanResult::categoryBytes(MemoryCategory c) const
{
    double sum = 0;
    for (const MemoryComponent& component : memory)
        if (component.category == c)
            sum += component.bytes;
    return sum;
}

const MemoryComponent* PlanResult::component(std::string_view key) const
{
    for (const MemoryComponent& component : memory)
        if (component.key == key)
            return &component;
    return nullptr;
}

const Figure* PlanResult::figure(std::string_view key) const
{
    for (const Figure& f : figures)
        if (f.key == key)
            return &f;
    return nullptr;
}

} // namespace tb::plan
