#pragma once

#include "compare/compare_follower.h"

#include <qcustomplot.h>

namespace tb::ui {

// The DPO runs among those compared, overlaid over optimizer steps in the
// colours the Overlay tab gives them (docs/COMPARE.md, "DPO runs"): the
// reward margin and the preference accuracy, the two figures TRL's users
// compare runs by. Runs without DPO figures are left out; the page shows
// this tab only while a DPO run is picked.
class PreferenceOverlay : public QCustomPlot {
    Q_OBJECT

public:
    explicit PreferenceOverlay(QWidget* parent = nullptr);

    // Only the runs whose snapshot changed are filled again (a snapshot is
    // shared until its run changes), all of them when other runs are
    // picked. Replotted only while shown, so a hidden tab costs the page's
    // redraws nothing.
    void setRuns(const QVector<ComparedRun>& runs);

    // The graphs of the index-th DPO run shown (tests).
    QCPGraph* margin(int index) const { return m_margins.value(index); }
    QCPGraph* accuracy(int index) const { return m_accuracies.value(index); }
    int runCount() const { return int(m_margins.size()); }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void addRun(const ComparedRun& run, const QColor& color);
    void fill(int index, const metrics::PreferenceHistory& preference);
    void fitRanges();

    QCPAxisRect* m_marginPanel = nullptr;
    QCPAxisRect* m_accuracyPanel = nullptr;
    QCPLegend* m_legend = nullptr;
    QVector<QCPGraph*> m_margins;
    QVector<QCPGraph*> m_accuracies;
    // The snapshot each DPO run's graphs hold and the run's place among the
    // compared runs (its colour), aligned with m_margins.
    QVector<std::shared_ptr<const metrics::PreferenceHistory>> m_drawn;
    QVector<QPair<QString, int>> m_places;
};

} // namespace tb::ui
