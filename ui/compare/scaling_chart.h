#pragma once

#include "metrics/run_compare.h"

#include <qcustomplot.h>

namespace tb::ui {

// Runs of one recipe at several sizes: tokens/s against the GPU (rank)
// count with the ideal line (the smallest run's rate times the count over
// its count) and the planner's prediction, and below the per-GPU efficiency
// against the smallest run.
class ScalingChart : public QCustomPlot {
    Q_OBJECT

public:
    explicit ScalingChart(QWidget* parent = nullptr);

    // Predicted points come from each run's own prediction (run_start);
    // `predictedCurve` (count -> tokens/s) from the planner where known.
    void setPoints(const std::vector<metrics::ScalingPoint>& points,
        const QVector<QPair<int, double>>& predictedCurve = {});

    QCPGraph* measured() const { return m_measured; }
    QCPGraph* ideal() const { return m_ideal; }
    QCPGraph* predicted() const { return m_predicted; }
    QCPGraph* efficiency() const { return m_efficiency; }

private:
    QCPAxisRect* m_ratePanel = nullptr;
    QCPAxisRect* m_efficiencyPanel = nullptr;
    QCPGraph* m_measured = nullptr;
    QCPGraph* m_ideal = nullptr;
    QCPGraph* m_predicted = nullptr;
    QCPGraph* m_efficiency = nullptr;
    QCPGraph* m_predictedEfficiency = nullptr;
    QCPGraph* m_idealEfficiency = nullptr;
};

} // namespace tb::ui
