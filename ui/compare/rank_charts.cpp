#include "compare/rank_charts.h"

#include "compare/run_colors.h"

namespace tb::ui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

void fill(QCPGraph* graph, const metrics::RunHistory& history, bool memory)
{
    QVector<double> steps, values;
    for (const metrics::StepRecord& step : history.steps()) {
        const double value = memory ? double(step.memPeakBytes) / kGiB : step.stepSeconds;
        if (value >= 0) {
            steps.append(double(step.step));
            values.append(value);
        }
    }
    graph->setData(steps, values, true);
}

// The rank's predicted peak as a level across its steps; empty without a
// prediction.
void fillPredicted(QCPGraph* graph, const metrics::RunHistory& history)
{
    const auto& start = history.start();
    const bool predicted = start && start->prediction && start->prediction->peakBytesPerRank >= 0
        && !history.steps().empty();
    if (!predicted) {
        graph->data()->clear();
        return;
    }
    const double level = double(start->prediction->peakBytesPerRank) / kGiB;
    graph->setData({double(history.steps().front().step), double(history.steps().back().step)},
        {level, level}, true);
}

} // namespace

RankCharts::RankCharts(QWidget* parent)
    : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("rankCharts"));
    plotLayout()->clear();
    // Each panel's legend lists only the graphs added to it by hand.
    setAutoAddPlottableToLegend(false);
    m_timePanel = new QCPAxisRect(this);
    m_memoryPanel = new QCPAxisRect(this);
    plotLayout()->addElement(0, 0, m_timePanel);
    plotLayout()->addElement(1, 0, m_memoryPanel);
    m_timePanel->axis(QCPAxis::atLeft)->setLabel(tr("step time (s)"));
    m_memoryPanel->axis(QCPAxis::atLeft)->setLabel(tr("peak memory (GiB)"));
    m_memoryPanel->axis(QCPAxis::atBottom)->setLabel(tr("optimizer step"));
    auto* group = new QCPMarginGroup(this);
    for (QCPAxisRect* panel : {m_timePanel, m_memoryPanel})
        panel->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    connect(m_timePanel->axis(QCPAxis::atBottom),
        qOverload<const QCPRange&>(&QCPAxis::rangeChanged), m_memoryPanel->axis(QCPAxis::atBottom),
        qOverload<const QCPRange&>(&QCPAxis::setRange));
    m_legend = new QCPLegend;
    m_timePanel->insetLayout()->addElement(m_legend, Qt::AlignTop | Qt::AlignRight);
    m_legend->setLayer(QStringLiteral("legend"));
    m_legend->setFont(font());
}

void RankCharts::setRun(const ComparedRun& run)
{
    QVector<QPair<int, const metrics::RunHistory*>> ranks{{0, run.history.get()}};
    for (const auto& [rank, history] : run.ranks)
        ranks.emplaceBack(rank, history.get());
    while (m_graphs.size() < ranks.size()) {
        QCPGraph* time =
            addGraph(m_timePanel->axis(QCPAxis::atBottom), m_timePanel->axis(QCPAxis::atLeft));
        QCPGraph* memory =
            addGraph(m_memoryPanel->axis(QCPAxis::atBottom), m_memoryPanel->axis(QCPAxis::atLeft));
        QCPGraph* predicted =
            addGraph(m_memoryPanel->axis(QCPAxis::atBottom), m_memoryPanel->axis(QCPAxis::atLeft));
        time->addToLegend(m_legend);
        m_graphs.emplaceBack(time, memory);
        m_predicted.append(predicted);
    }
    while (m_graphs.size() > ranks.size()) {
        removeGraph(m_graphs.last().first);
        removeGraph(m_graphs.last().second);
        removeGraph(m_predicted.last());
        m_graphs.removeLast();
        m_predicted.removeLast();
    }
    for (qsizetype i = 0; i < ranks.size(); ++i) {
        const QPen pen(runColor(int(i)), 1.3);
        for (QCPGraph* graph : {m_graphs[i].first, m_graphs[i].second}) {
            graph->setPen(pen);
            graph->setName(tr("rank %1").arg(ranks[i].first));
        }
        fill(m_graphs[i].first, *ranks[i].second, false);
        fill(m_graphs[i].second, *ranks[i].second, true);
        QPen dotted = pen;
        dotted.setStyle(Qt::DotLine);
        m_predicted[i]->setPen(dotted);
        m_predicted[i]->setName(i == 0 ? tr("predicted peak (dotted, per rank)")
                                       : tr("rank %1 predicted peak").arg(ranks[i].first));
        fillPredicted(m_predicted[i], *ranks[i].second);
    }
    // One entry, last, says what the dotted levels are, when there are any.
    if (!m_predicted.isEmpty()) {
        m_predicted.front()->removeFromLegend(m_legend);
        if (m_predicted.front()->dataCount() > 0)
            m_predicted.front()->addToLegend(m_legend);
    }
    for (QCPAxisRect* panel : {m_timePanel, m_memoryPanel}) {
        panel->axis(QCPAxis::atLeft)->rescale();
        panel->axis(QCPAxis::atLeft)->setRangeLower(0);
        panel->axis(QCPAxis::atLeft)->scaleRange(1.08, panel->axis(QCPAxis::atLeft)->range().lower);
    }
    m_timePanel->axis(QCPAxis::atBottom)->rescale();
    replot(QCustomPlot::rpQueuedReplot);
}

void RankCharts::clearRun()
{
    ComparedRun none;
    none.history = std::make_shared<const metrics::RunHistory>();
    setRun(none);
}

int RankCharts::rankCount() const
{
    return int(m_graphs.size());
}

QCPGraph* RankCharts::stepTimeCurve(int rank) const
{
    return rank >= 0 && rank < m_graphs.size() ? m_graphs[rank].first : nullptr;
}

QCPGraph* RankCharts::predictedPeakCurve(int rank) const
{
    return rank >= 0 && rank < m_predicted.size() ? m_predicted[rank] : nullptr;
}

} // namespace tb::ui
