#pragma once

#include "plan/plan_result.h"

#include <qcustomplot.h>

#include <array>

namespace tb::ui {

// Per-GPU memory as one stacked bar, a segment per category in the shared
// colours, with the GPU's usable memory as a line and the headroom written
// beside it. Hovering a segment shows its bytes and the planner's
// explanation of every component in it.
class BreakdownChart : public QCustomPlot {
    Q_OBJECT

public:
    explicit BreakdownChart(QWidget* parent = nullptr);

    void setResult(const plan::PlanResult& result);

    // What the chart shows, for tests and reports.
    double segmentGiB(plan::MemoryCategory category) const;
    double capacityGiB() const;
    QString headroomText() const;
    // The tooltip text for a category (what hovering its segment shows).
    QString segmentToolTip(plan::MemoryCategory category) const;

private:
    void showToolTipAt(QMouseEvent* event);

    std::array<QCPBars*, plan::kMemoryCategoryCount> m_segments{};
    QCPItemStraightLine* m_capacityLine = nullptr;
    QCPItemText* m_capacityLabel = nullptr;
    plan::PlanResult m_result;
};

} // namespace tb::ui
