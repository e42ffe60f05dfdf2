#pragma once

#include "metrics/run_catalog.h"

#include <QTableWidget>

namespace tb::ui {

// Each compared run's measured figures beside the planner's prediction for
// its own configuration (recorded in its run_start), with the ratios:
// tokens/s, step time, and rank 0's peak memory in the step, while loading
// and while exporting (the phases of docs/PLANNER.md 4.11).
class PredictionTable : public QTableWidget {
    Q_OBJECT

public:
    enum Column {
        Run,
        Device,
        Rate,
        PredictedRate,
        RateRatio,
        StepTime,
        PredictedStepTime,
        StepTimeRatio,
        Peak,
        PredictedPeak,
        PeakRatio,
        LoadPeak,
        PredictedLoadPeak,
        LoadPeakRatio,
        ExportPeak,
        PredictedExportPeak,
        ExportPeakRatio,
        ColumnCount
    };

    explicit PredictionTable(QWidget* parent = nullptr);

    void setRuns(const QVector<metrics::RunEntry>& runs);
};

} // namespace tb::ui
