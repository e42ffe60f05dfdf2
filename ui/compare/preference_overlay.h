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

    // Redrawn whole: a handful of runs, once a second at most. Replotted
    // only while shown, so a hidden tab costs the page's redraws nothing.
    void setRuns(const QVector<ComparedRun>& runs);

    // The graphs of the index-th DPO run shown (tests).
    QCPGraph* margin(int index) const { return m_margins.value(index); }
    QCPGraph* accuracy(int index) const { return m_accuracies.value(index); }
    int runCount() const { return int(m_margins.size()); }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void addRun(const ComparedRun& run, const QColor& color);
    void fitRanges();

    QCPAxisRect* m_marginPanel = nullptr;
    QCPAxisRect* m_accuracyPanel = nullptr;
    QCPLegend* m_legend = nullptr;
    QVector<QCPGraph*> m_margins;
    QVector<QCPGraph*> m_accuracies;
};

} // namespace tb::ui
