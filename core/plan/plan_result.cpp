#include "plan/plan_result.h"

namespace tb::plan {

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
