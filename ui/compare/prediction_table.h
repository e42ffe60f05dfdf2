#pragma once

#include "metrics/run_catalog.h"

#include <QTableWidget>

namespace tb::ui {

// Each compared run's measured figures beside the planner's prediction for
// its own configuration (recorded in its run_start), with the ratios:
// tokens/s, step time and peak memory per rank.
class PredictionTable : public QTableWidget {
    Q_OBJECT

public:
    enum Column { Run, Device, Rate, PredictedRate, RateRatio, StepTime, PredictedStepTime,
        StepTimeRatio, Peak, PredictedPeak, PeakRatio, ColumnCount };

    explicit PredictionTable(QWidget* parent = nullptr);

    void setRuns(const QVector<metrics::RunEntry>& runs);
};

} // namespace tb::ui
