#pragma once

#include "metrics/run_history.h"

#include <qcustomplot.h>

namespace tb::ui {

// A mixture of experts' routing balance (docs/MONITOR.md, "Routing"): a heat
// map of the latest step's tokens per expert, layer by layer, as a multiple
// of the even share on a log colour scale centred on 1; under it, over
// steps, the busiest expert's load over the even share (the worst layer and
// the mean of layers), and the router's auxiliary loss when the run reports
// it. Only the points added since the last call are appended, so a long
// run costs each batch of steps what that batch brings.
class RoutingCharts : public QCustomPlot {
    Q_OBJECT

public:
    // The colour scale's ends: a quarter of the even share and four times it
    // (the worst Mixtral can do, 8 experts / k = 2); beyond, the end colour.
    static constexpr double kShareLow = 0.25;
    static constexpr double kShareHigh = 4.0;

    explicit RoutingCharts(QWidget* parent = nullptr);

    void showHistory(const metrics::RunHistory& history);

    int balancePointCount() const;
    int auxLossPointCount() const;
    bool hasAuxLossPanel() const { return m_auxPanel != nullptr; }
    QCPColorMap* heatMap() const { return m_heat; }
    int64_t heatMapStep() const { return m_heatStep; }
    QString title() const;

private:
    void showLoads(const std::optional<metrics::ExpertLoads>& loads);
    void appendPoints(const std::vector<metrics::RoutingPoint>& points);
    void addAuxLossPanel();
    void setStepRange(const std::vector<metrics::RoutingPoint>& points);
    void showCellAt(QMouseEvent* event);

    QCPTextElement* m_title = nullptr;
    QCPAxisRect* m_heatPanel = nullptr;
    QCPColorMap* m_heat = nullptr;
    QCPAxisRect* m_balancePanel = nullptr;
    QCPGraph* m_worst = nullptr;
    QCPGraph* m_mean = nullptr;
    QCPGraph* m_even = nullptr;
    QCPAxisRect* m_auxPanel = nullptr;
    QCPGraph* m_auxLoss = nullptr;

    std::optional<metrics::ExpertLoads> m_loads; // what the heat map shows, for its tooltip
    int64_t m_heatStep = -1;
    size_t m_pointsShown = 0;
    uint64_t m_purgesSeen = 0;
    double m_highestRatio = 1;
    double m_highestAuxLoss = 0;
};

} // namespace tb::ui
