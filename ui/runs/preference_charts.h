#pragma once

#include "metrics/preference_steps.h"
#include "metrics/run_history.h"

#include <qcustomplot.h>

namespace tb::ui {

// A DPO run's preference figures over optimizer steps (docs/MONITOR.md,
// "Preference tuning"), as TRL logs them: the rewards of the chosen and the
// rejected completions, their margin, and the share of pairs whose chosen
// reward is the higher; the latest step's figures with the policy's and
// the reference's log-probabilities in the title, any step's in a tooltip.
// Only the points added since the last call are appended.
class PreferenceCharts : public QCustomPlot {
    Q_OBJECT

public:
    explicit PreferenceCharts(QWidget* parent = nullptr);

    void showHistory(
        const metrics::RunHistory& history, const metrics::PreferenceHistory& preference);

    QCPGraph* rewardsChosen() const { return m_chosen; }
    QCPGraph* rewardsRejected() const { return m_rejected; }
    QCPGraph* margin() const { return m_margin; }
    QCPGraph* accuracy() const { return m_accuracy; } // percent of pairs
    QString title() const;
    // What the tooltip says at `step`: the figures of the nearest step drawn.
    QString describeStepNear(double step) const;

private:
    void appendPoints(const std::vector<metrics::PreferencePoint>& points);
    void setRanges(const std::vector<metrics::PreferencePoint>& points);
    void showFiguresAt(QMouseEvent* event);

    QCPTextElement* m_title = nullptr;
    QCPAxisRect* m_rewardsPanel = nullptr;
    QCPAxisRect* m_marginPanel = nullptr;
    QCPAxisRect* m_accuracyPanel = nullptr;
    QCPGraph* m_chosen = nullptr;
    QCPGraph* m_rejected = nullptr;
    QCPGraph* m_margin = nullptr;
    QCPGraph* m_accuracy = nullptr;

    const metrics::PreferenceHistory* m_shown =
        nullptr; // for the tooltip; outlives this (RunView owns both)
    size_t m_pointsShown = 0;
    uint64_t m_purgesSeen = 0;
    QCPRange m_rewardsSpan{0, 0}; // every reward drawn, and 0
    QCPRange m_marginSpan{0, 0};
};

} // namespace tb::ui
