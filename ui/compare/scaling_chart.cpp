#include "compare/scaling_chart.h"

#include <algorithm>
#include <map>

namespace tb::ui {

namespace {

const QColor kMeasured(31, 119, 180);
const QColor kPredicted(255, 127, 14);
const QColor kIdeal(110, 110, 110);

QCPGraph* graphIn(
    QCustomPlot* plot, QCPAxisRect* panel, const QString& name, const QPen& pen, bool points)
{
    QCPGraph* graph = plot->addGraph(panel->axis(QCPAxis::atBottom), panel->axis(QCPAxis::atLeft));
    graph->setName(name);
    graph->setPen(pen);
    if (points)
        graph->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssDisc, pen.color(), pen.color(), 8));
    return graph;
}

void fitPanel(QCPAxisRect* panel, double maxCount)
{
    panel->axis(QCPAxis::atBottom)->setRange(0, maxCount * 1.1 + 0.5);
    QCPAxis* values = panel->axis(QCPAxis::atLeft);
    values->rescale();
    values->setRange(0, values->range().upper * 1.1 + 1e-9);
}

} // namespace

ScalingChart::ScalingChart(QWidget* parent)
    : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("scalingChart"));
    setMinimumHeight(360);
    plotLayout()->clear();
    // Each panel's legend lists only the graphs added to it by hand.
    setAutoAddPlottableToLegend(false);
    m_ratePanel = new QCPAxisRect(this);
    m_efficiencyPanel = new QCPAxisRect(this);
    plotLayout()->addElement(0, 0, m_ratePanel);
    plotLayout()->addElement(1, 0, m_efficiencyPanel);
    m_ratePanel->axis(QCPAxis::atLeft)->setLabel(tr("tokens/s"));
    m_efficiencyPanel->axis(QCPAxis::atLeft)->setLabel(tr("per-GPU efficiency (%)"));
    m_efficiencyPanel->axis(QCPAxis::atBottom)->setLabel(tr("GPUs (ranks)"));
    auto* group = new QCPMarginGroup(this);
    for (QCPAxisRect* panel : {m_ratePanel, m_efficiencyPanel}) {
        panel->setMarginGroup(QCP::msLeft | QCP::msRight, group);
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
        ticker->setTickStep(1);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        panel->axis(QCPAxis::atBottom)->setTicker(ticker);
    }
    const QPen dashed(kIdeal, 1.2, Qt::DashLine);
    m_ideal = graphIn(this, m_ratePanel, tr("ideal (linear from the smallest run)"), dashed, false);
    m_predicted =
        graphIn(this, m_ratePanel, tr("planner's prediction"), QPen(kPredicted, 1.6), true);
    m_measured = graphIn(this, m_ratePanel, tr("measured"), QPen(kMeasured, 2.0), true);
    m_idealEfficiency = graphIn(this, m_efficiencyPanel, tr("ideal"), dashed, false);
    m_predictedEfficiency =
        graphIn(this, m_efficiencyPanel, tr("predicted"), QPen(kPredicted, 1.6), true);
    m_efficiency = graphIn(this, m_efficiencyPanel, tr("measured"), QPen(kMeasured, 2.0), true);
    auto* legendBox = new QCPLegend;
    m_ratePanel->insetLayout()->addElement(legendBox, Qt::AlignTop | Qt::AlignLeft);
    legendBox->setLayer(QStringLiteral("legend"));
    legendBox->setFont(font());
    for (QCPGraph* graph : {m_measured, m_predicted, m_ideal})
        graph->addToLegend(legendBox);
}

void ScalingChart::setPoints(const std::vector<metrics::ScalingPoint>& points,
    const QVector<QPair<int, double>>& predictedCurve)
{
    QVector<double> counts, rates, efficiencies;
    std::map<int, double> predicted;
    for (const metrics::ScalingPoint& point : points) {
        counts.append(point.gpus);
        rates.append(point.tokensPerSecond);
        efficiencies.append(point.efficiency * 100);
        if (point.predictedTokensPerSecond > 0)
            predicted.emplace(point.gpus, point.predictedTokensPerSecond);
    }
    for (const auto& [count, rate] : predictedCurve)
        predicted[count] = rate;
    m_measured->setData(counts, rates);
    m_efficiency->setData(counts, efficiencies);

    QVector<double> predictedCounts, predictedRates, predictedEfficiency;
    for (const auto& [count, rate] : predicted) {
        predictedCounts.append(count);
        predictedRates.append(rate);
        const auto& first = *predicted.begin();
        predictedEfficiency.append(100.0 * (rate / count) / (first.second / first.first));
    }
    m_predicted->setData(predictedCounts, predictedRates, true);
    m_predictedEfficiency->setData(predictedCounts, predictedEfficiency, true);

    double maxCount = 1;
    for (const double count : counts + predictedCounts)
        maxCount = std::max(maxCount, count);
    QVector<double> idealCounts, idealRates;
    if (!points.empty()) {
        const metrics::ScalingPoint& first = points.front();
        for (const double count : {double(first.gpus), maxCount}) {
            idealCounts.append(count);
            idealRates.append(first.tokensPerSecond * count / first.gpus);
        }
    }
    m_ideal->setData(idealCounts, idealRates, true);
    m_idealEfficiency->setData(idealCounts, QVector<double>(idealCounts.size(), 100.0), true);
    fitPanel(m_ratePanel, maxCount);
    fitPanel(m_efficiencyPanel, maxCount);
    replot(QCustomPlot::rpQueuedReplot);
}

} // namespace tb::ui
