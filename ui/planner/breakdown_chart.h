#pragma once

#include "plan/plan_result.h"

#include <qcustomplot.h>

#include <array>

namespace tb::ui {

// Per-GPU memory as one stacked bar, a segment per category in the shared
// colours, with the GPU's usable memory as a line and the headroom written
// beside it. Ticks under the bar mark the three peaks (allocated, reserved,
// device used), named with their sizes above it. Hovering a segment shows
// its bytes and the planner's explanation of every component in it.
class BreakdownChart : public QCustomPlot {
    Q_OBJECT

public:
    explicit BreakdownChart(QWidget* parent = nullptr);

    void setResult(const plan::PlanResult& result);

    // What the chart shows, for tests and reports.
    double segmentGiB(plan::MemoryCategory category) const;
    double capacityGiB() const;
    QString headroomText() const;
    QString peaksText() const; // "allocated 20.1 GiB · reserved 20.6 GiB · device used 21.1 GiB"
    double peakMarkGiB(plan::PeakLevel level) const;
    // The tooltip text for a category (what hovering its segment shows).
    QString segmentToolTip(plan::MemoryCategory category) const;

private:
    void showToolTipAt(QMouseEvent* event);

    std::array<QCPBars*, plan::kMemoryCategoryCount> m_segments{};
    QCPItemStraightLine* m_capacityLine = nullptr;
    QCPItemText* m_capacityLabel = nullptr;
    std::array<QCPItemLine*, 3> m_peakMarks{};
    QCPItemText* m_peaksLabel = nullptr;
    plan::PlanResult m_result;
};

} // namespace tb::ui
