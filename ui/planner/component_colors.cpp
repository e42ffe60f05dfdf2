#include "planner/component_colors.h"

namespace tb::ui {

QColor categoryColor(plan::MemoryCategory category)
{
    switch (category) {
    case plan::MemoryCategory::Weights:
        return QColor(0x4c, 0x78, 0xa8);
    case plan::MemoryCategory::Gradients:
        return QColor(0xf5, 0x85, 0x18);
    case plan::MemoryCategory::Optimizer:
        return QColor(0x54, 0xa2, 0x4b);
    case plan::MemoryCategory::Activations:
        return QColor(0xb2, 0x79, 0xa2);
    case plan::MemoryCategory::Logits:
        return QColor(0xe4, 0x57, 0x56);
    case plan::MemoryCategory::Buffers:
        return QColor(0x72, 0xb7, 0xb2);
    case plan::MemoryCategory::Overhead:
        return QColor(0x9d, 0x9d, 0x9d);
    }
    return Qt::black;
}

QColor capacityColor()
{
    return QColor(0x20, 0x20, 0x20);
}

QColor overCapacityColor()
{
    return QColor(0xc0, 0x1c, 0x28);
}

QColor throughputColor()
{
    return QColor(0x1f, 0x4e, 0x79);
}

QColor peakMarkColor()
{
    return QColor(0x10, 0x10, 0x10);
}

} // namespace tb::ui
