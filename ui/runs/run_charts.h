#pragma once

#include "metrics/run_history.h"

#include <qcustomplot.h>

namespace tb::ui {

// A run's curves over optimizer steps, stacked on one step axis: training
// loss with the validation losses as points (and a mark where either was not
// finite), tokens/s, and the process's
// memory (resident now and its peak), with the planner's predicted
// tokens/s and peak memory where run_start records them. Redrawn whole from the history: a
// resumed run that repeated steps never leaves a curve doubling back.
class RunCharts : public QCustomPlot {
    Q_OBJECT

public:
    explicit RunCharts(QWidget* parent = nullptr);

    void showHistory(const metrics::RunHistory& history);
    void clearCurves();

    int lossPointCount() const;
    // Steps whose training or validation loss was not finite (a diverged
    // run writes null), marked across the top of the loss panel.
    int notFiniteLossCount() const;
    int evalPointCount() const;
    int throughputPointCount() const;
    int memoryPointCount() const;
    // The planner's figures from run_start, drawn as dotted lines across the
    // run (empty when its run_start has no prediction).
    QCPGraph* predictedThroughput() const { return m_predictedSpeed; }
    QCPGraph* predictedPeakMemory() const { return m_predictedPeak; }

private:
    void showPrediction(const metrics::RunHistory& history);
    void markNotFinite(const metrics::RunHistory& history);

    QCPGraph* m_loss = nullptr;
    QCPGraph* m_evalLoss = nullptr;
    QCPGraph* m_notFinite = nullptr;
    QCPGraph* m_tokensPerSecond = nullptr;
    QCPGraph* m_memory = nullptr;
    QCPGraph* m_peakMemory = nullptr;
    QCPGraph* m_predictedSpeed = nullptr;
    QCPGraph* m_predictedPeak = nullptr;
};

} // namespace tb::ui
