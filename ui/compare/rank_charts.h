#pragma once

#include "compare/compare_follower.h"

#include <qcustomplot.h>

namespace tb::ui {

// One run's ranks side by side: step time and peak memory of every rank
// over steps (rank 0 from events.jsonl, the others from
// events.rank<N>.jsonl), so a straggler or a rank holding more shows; each
// rank's predicted peak (its run_start's planner estimate) is a dotted
// level in the rank's colour beside its measured curve.
class RankCharts : public QCustomPlot {
    Q_OBJECT

public:
    explicit RankCharts(QWidget* parent = nullptr);

    void setRun(const ComparedRun& run);
    void clearRun();
    int rankCount() const;
    QCPGraph* stepTimeCurve(int rank) const;
    QCPGraph* predictedPeakCurve(int rank) const;

private:
    QCPAxisRect* m_timePanel = nullptr;
    QCPAxisRect* m_memoryPanel = nullptr;
    QCPLegend* m_legend = nullptr;
    QVector<QPair<QCPGraph*, QCPGraph*>> m_graphs; // per rank: step time, memory
    QVector<QCPGraph*> m_predicted; // per rank: the predicted peak, dotted
};

} // namespace tb::ui
