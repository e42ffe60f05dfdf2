#include "runs/run_charts.h"

#include "runs/step_panel.h"

#include <algorithm>
#include <cmath>

namespace tb::ui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Only the figures the run reported: negative means "not known" in a
// StepRecord, NaN a diverged loss.
void addIfKnown(QVector<double>& keys, QVector<double>& values, double step, double value)
{
    if (value >= 0 && std::isfinite(value)) {
        keys.append(step);
        values.append(value);
    }
}

void rescale(QCPGraph* graph)
{
    bool found = false;
    const QCPRange range = graph->getValueRange(found);
    if (found)
        graph->valueAxis()->setRange(
            range.lower >= 0 ? 0 : range.lower, range.upper * 1.08 + 1e-12);
}

// Keeps `extra` (a predicted level) in view on `graph`'s value axis.
void widenToInclude(QCPGraph* graph, QCPGraph* extra)
{
    bool found = false;
    const QCPRange range = extra->getValueRange(found);
    if (found && range.upper * 1.08 > graph->valueAxis()->range().upper)
        graph->valueAxis()->setRangeUpper(range.upper * 1.08);
}

} // namespace

RunCharts::RunCharts(QWidget* parent)
    : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("runCharts"));
    setMinimumHeight(360);
    plotLayout()->clear();

    QCPAxisRect* lossPanel = addStepPanel(this, 0, tr("loss (nats/token)"));
    QCPAxisRect* speedPanel = addStepPanel(this, 1, tr("tokens/s"));
    QCPAxisRect* memoryPanel = addStepPanel(this, 2, tr("memory (GiB)"));
    memoryPanel->axis(QCPAxis::atBottom)->setLabel(tr("optimizer step"));
    // One step axis: panning or zooming one panel moves the others.
    auto* group = new QCPMarginGroup(this);
    for (QCPAxisRect* panel : {lossPanel, speedPanel, memoryPanel}) {
        panel->setMarginGroup(QCP::msLeft | QCP::msRight, group);
        for (QCPAxisRect* other : {lossPanel, speedPanel, memoryPanel}) {
            if (other != panel)
                connect(panel->axis(QCPAxis::atBottom),
                    qOverload<const QCPRange&>(&QCPAxis::rangeChanged),
                    other->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::setRange));
        }
    }

    auto graphIn = [this](QCPAxisRect* panel, const QString& name, const QColor& color) {
        QCPGraph* graph = addGraph(panel->axis(QCPAxis::atBottom), panel->axis(QCPAxis::atLeft));
        graph->setName(name);
        graph->setPen(stepCurvePen(color));
        return graph;
    };
    m_loss = graphIn(lossPanel, tr("training loss"), QColor(31, 119, 180));
    m_evalLoss = graphIn(lossPanel, tr("validation loss"), QColor(214, 39, 40));
    m_evalLoss->setLineStyle(QCPGraph::lsLine);
    m_evalLoss->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 7));
    m_notFinite = graphIn(lossPanel, tr("loss not finite"), QColor(214, 39, 40));
    m_notFinite->setLineStyle(QCPGraph::lsNone);
    m_notFinite->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCross, QColor(214, 39, 40), 9));
    m_tokensPerSecond = graphIn(speedPanel, tr("tokens/s"), QColor(44, 160, 44));
    m_memory = graphIn(memoryPanel, tr("resident"), QColor(148, 103, 189));
    m_peakMemory = graphIn(memoryPanel, tr("peak"), QColor(140, 86, 75));
    m_peakMemory->setPen(stepCurvePen(QColor(140, 86, 75), Qt::DashLine));
    m_predictedSpeed = graphIn(speedPanel, tr("predicted"), QColor(255, 127, 14));
    m_predictedPeak = graphIn(memoryPanel, tr("predicted peak"), QColor(255, 127, 14));
    for (QCPGraph* graph : {m_predictedSpeed, m_predictedPeak})
        graph->setPen(stepCurvePen(QColor(255, 127, 14), Qt::DotLine));

    // A legend per panel with two curves, in its lower left corner: the
    // value axes start at 0, so the curves (losses, memory) stay above it,
    // and the newest steps at the right are never covered.
    for (QCPAxisRect* panel : {lossPanel, speedPanel, memoryPanel}) {
        auto* panelLegend = new QCPLegend;
        panel->insetLayout()->addElement(panelLegend, Qt::AlignBottom | Qt::AlignLeft);
        panelLegend->setLayer(QStringLiteral("legend"));
        panelLegend->setFont(font());
        for (QCPGraph* graph : {m_loss, m_evalLoss, m_tokensPerSecond, m_predictedSpeed, m_memory,
                 m_peakMemory, m_predictedPeak}) {
            if (graph->keyAxis()->axisRect() == panel)
                graph->addToLegend(panelLegend);
        }
    }
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
}

void RunCharts::showHistory(const metrics::RunHistory& history)
{
    QVector<double> lossSteps, losses, speedSteps, speeds, memorySteps, memory, peakSteps, peaks;
    for (const metrics::StepRecord& record : history.steps()) {
        const double step = double(record.step);
        addIfKnown(lossSteps, losses, step, record.loss);
        addIfKnown(speedSteps, speeds, step, record.tokensPerSecond);
        if (record.memAllocatedBytes >= 0)
            addIfKnown(memorySteps, memory, step, double(record.memAllocatedBytes) / kGiB);
        if (record.memPeakBytes >= 0)
            addIfKnown(peakSteps, peaks, step, double(record.memPeakBytes) / kGiB);
    }
    QVector<double> evalSteps, evalLosses;
    for (const metrics::EvalPoint& point : history.evals())
        addIfKnown(evalSteps, evalLosses, double(point.step), point.loss);

    m_loss->setData(lossSteps, losses, true);
    m_evalLoss->setData(evalSteps, evalLosses, true);
    m_tokensPerSecond->setData(speedSteps, speeds, true);
    m_memory->setData(memorySteps, memory, true);
    m_peakMemory->setData(peakSteps, peaks, true);
    showPrediction(history);

    const double lastStep = std::max<double>(double(history.lastStep()), 1.0);
    double firstStep = history.steps().empty() ? 0.0 : double(history.steps().front().step);
    if (!history.evals().empty()) // the evaluation before training is at step 0
        firstStep = std::min(firstStep, double(history.evals().front().step));
    m_loss->keyAxis()->setRange(std::min(firstStep, lastStep - 1.0), lastStep); // moves the others
    for (QCPGraph* graph : {m_loss, m_tokensPerSecond, m_memory})
        rescale(graph);
    widenToInclude(m_tokensPerSecond, m_predictedSpeed);
    // Losses can share a panel with the validation points only on one scale.
    bool found = false;
    QCPRange lossRange = m_loss->getValueRange(found);
    bool evalFound = false;
    const QCPRange evalRange = m_evalLoss->getValueRange(evalFound);
    if (evalFound)
        lossRange = found ? QCPRange(std::min(lossRange.lower, evalRange.lower),
                        std::max(lossRange.upper, evalRange.upper))
                          : evalRange;
    if (found || evalFound)
        m_loss->valueAxis()->setRange(0, lossRange.upper * 1.08 + 1e-12);
    markNotFinite(history);
    bool peakFound = false;
    const QCPRange peakRange = m_peakMemory->getValueRange(peakFound);
    if (peakFound)
        m_memory->valueAxis()->setRange(0, peakRange.upper * 1.08 + 1e-12);
    widenToInclude(m_memory, m_predictedPeak);
    replot(QCustomPlot::rpQueuedReplot);
}

// A cross near the top of the loss panel at each step whose training or
// validation loss was not finite: there is no value to draw, and a
// diverged run must not look like one that stopped reporting. In the loss
// panel's legend only while there is one.
void RunCharts::markNotFinite(const metrics::RunHistory& history)
{
    QVector<double> steps;
    for (const metrics::StepRecord& record : history.steps()) {
        if (!std::isfinite(record.loss))
            steps.append(double(record.step));
    }
    for (const metrics::EvalPoint& point : history.evals()) {
        if (!std::isfinite(point.loss))
            steps.append(double(point.step));
    }
    std::sort(steps.begin(), steps.end());
    const double top = m_loss->valueAxis()->range().upper * 0.95;
    m_notFinite->setData(steps, QVector<double>(steps.size(), top), true);
    auto* panelLegend =
        qobject_cast<QCPLegend*>(m_loss->valueAxis()->axisRect()->insetLayout()->elementAt(0));
    if (!panelLegend)
        return;
    if (steps.isEmpty())
        m_notFinite->removeFromLegend(panelLegend);
    else if (!panelLegend->hasItemWithPlottable(m_notFinite))
        m_notFinite->addToLegend(panelLegend);
}

// A level across the run's steps, at the predicted figure.
void RunCharts::showPrediction(const metrics::RunHistory& history)
{
    const std::optional<metrics::RunPrediction>& prediction =
        history.start() ? history.start()->prediction : std::nullopt;
    const double first = history.steps().empty() ? 0.0 : double(history.steps().front().step);
    const double last = std::max(double(history.lastStep()), first + 1);
    auto level = [&](QCPGraph* graph, double value) {
        if (value > 0)
            graph->setData({first, last}, {value, value}, true);
        else
            graph->data()->clear();
    };
    level(m_predictedSpeed, prediction ? prediction->tokensPerSecond : -1);
    level(m_predictedPeak, prediction ? double(prediction->peakBytesPerRank) / kGiB : -1);
}

void RunCharts::clearCurves()
{
    for (QCPGraph* graph : {m_loss, m_evalLoss, m_notFinite, m_tokensPerSecond, m_memory,
             m_peakMemory, m_predictedSpeed, m_predictedPeak})
        graph->data()->clear();
    replot(QCustomPlot::rpQueuedReplot);
}

int RunCharts::lossPointCount() const
{
    return m_loss->dataCount();
}
int RunCharts::evalPointCount() const
{
    return m_evalLoss->dataCount();
}
int RunCharts::notFiniteLossCount() const
{
    return m_notFinite->dataCount();
}
int RunCharts::throughputPointCount() const
{
    return m_tokensPerSecond->dataCount();
}
int RunCharts::memoryPointCount() const
{
    return m_memory->dataCount();
}

} // namespace tb::ui
