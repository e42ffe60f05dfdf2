#pragma once

#include "plan/estimator.h"

#include <qcustomplot.h>

namespace tb::ui {

// Peak per-GPU memory as one input varies (micro-batch, sequence length or
// GPU count), with the usable memory as a line, the points that do not fit
// in red, tokens/s on the right axis and the current value marked: where it
// stops fitting and what each step buys.
class WhatIfChart : public QCustomPlot {
    Q_OBJECT

public:
    explicit WhatIfChart(QWidget* parent = nullptr);

    void setSweep(
        plan::SweepAxis axis, const std::vector<plan::SweepPoint>& points, long long currentValue);

    int pointCount() const;
    int fittingPointCount() const;
    double capacityGiB() const;
    // What the memory axis, capped near twice the capacity, leaves out
    // ("off the scale: up to 412 GiB at micro-batch 128"); empty when
    // every point is drawn.
    QString offScaleNote() const;

private:
    QCPGraph* m_memory = nullptr;
    QCPGraph* m_overCapacity = nullptr;
    QCPGraph* m_throughput = nullptr;
    QCPItemStraightLine* m_capacityLine = nullptr;
    QCPItemStraightLine* m_currentLine = nullptr;
    QCPItemText* m_capacityLabel = nullptr;
    QCPItemText* m_offScaleLabel = nullptr;
    int m_fitting = 0;
};

// The values a what-if sweep visits for an axis, around the current value.
std::vector<long long> sweepValues(plan::SweepAxis axis, long long currentValue, int gpusPerVm);

} // namespace tb::ui
