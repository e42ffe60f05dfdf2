#include "runs/routing_charts.h"

#include "runs/step_panel.h"

#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tb::ui {

namespace {

// Blue below the even share, white at it, red above: a diverging scale, so
// that an idle expert and a swamped one read as opposite failures.
QCPColorGradient shareGradient()
{
    QCPColorGradient gradient;
    gradient.setColorStopAt(0.0, QColor(33, 102, 172));
    gradient.setColorStopAt(0.5, QColor(247, 247, 247));
    gradient.setColorStopAt(1.0, QColor(178, 24, 43));
    gradient.setLevelCount(256);
    return gradient;
}

// The cells of a dimension of `count`: one cell spans the range when alone,
// as QCustomPlot draws a cell from its centre halfway to its neighbours.
QCPRange cellRange(int count)
{
    return count == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, count - 1);
}

QSharedPointer<QCPAxisTicker> integerTicker()
{
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    return ticker;
}

double layerTokens(const std::vector<int64_t>& layer)
{
    return std::accumulate(layer.begin(), layer.end(), 0.0,
        [](double sum, int64_t count) { return sum + double(count); });
}

} // namespace

RoutingCharts::RoutingCharts(QWidget* parent)
    : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("routingCharts"));
    setMinimumSize(360, 360);
    plotLayout()->clear();
    QFont bold = font();
    bold.setBold(true);
    m_title = new QCPTextElement(this, QString(), bold);
    plotLayout()->addElement(0, 0, m_title);

    // The heat map and its colour scale side by side in a row of their own.
    auto* heatRow = new QCPLayoutGrid;
    plotLayout()->addElement(1, 0, heatRow);
    m_heatPanel = new QCPAxisRect(this);
    heatRow->addElement(0, 0, m_heatPanel);
    m_heatPanel->setRangeDrag(Qt::Orientations());
    m_heatPanel->setRangeZoom(Qt::Orientations());
    QCPAxis* experts = m_heatPanel->axis(QCPAxis::atBottom);
    QCPAxis* layers = m_heatPanel->axis(QCPAxis::atLeft);
    experts->setLabel(tr("expert"));
    layers->setLabel(tr("MoE layer"));
    layers->setRangeReversed(true); // the first layer on top, as a model is listed
    for (QCPAxis* axis : {experts, layers}) {
        axis->setTicker(integerTicker());
        axis->grid()->setVisible(false);
    }
    m_heat = new QCPColorMap(experts, layers);
    m_heat->setInterpolate(false);
    auto* scale = new QCPColorScale(this);
    heatRow->addElement(0, 1, scale);
    scale->setType(QCPAxis::atRight);
    scale->setDataScaleType(QCPAxis::stLogarithmic);
    scale->setDataRange(QCPRange(kShareLow, kShareHigh));
    auto logTicker = QSharedPointer<QCPAxisTickerLog>::create();
    logTicker->setLogBase(2);
    scale->axis()->setTicker(logTicker);
    scale->axis()->setNumberFormat(QStringLiteral("g"));
    scale->setLabel(tr("tokens / even share"));
    scale->setGradient(shareGradient());
    m_heat->setColorScale(scale);

    m_balancePanel = addStepPanel(this, 2, tr("busiest expert / even share"));
    m_balancePanel->axis(QCPAxis::atBottom)->setLabel(tr("optimizer step"));
    m_worst =
        addGraph(m_balancePanel->axis(QCPAxis::atBottom), m_balancePanel->axis(QCPAxis::atLeft));
    m_worst->setName(tr("worst layer"));
    m_worst->setPen(stepCurvePen(QColor(178, 24, 43)));
    m_mean =
        addGraph(m_balancePanel->axis(QCPAxis::atBottom), m_balancePanel->axis(QCPAxis::atLeft));
    m_mean->setName(tr("mean of layers"));
    m_mean->setPen(stepCurvePen(QColor(33, 102, 172)));
    m_even =
        addGraph(m_balancePanel->axis(QCPAxis::atBottom), m_balancePanel->axis(QCPAxis::atLeft));
    m_even->setName(tr("even"));
    m_even->setPen(QPen(QColor(120, 120, 120), 1.2, Qt::DotLine));
    auto* panelLegend = new QCPLegend;
    m_balancePanel->insetLayout()->addElement(panelLegend, Qt::AlignBottom | Qt::AlignLeft);
    panelLegend->setLayer(QStringLiteral("legend"));
    panelLegend->setFont(font());
    for (QCPGraph* graph : {m_worst, m_mean, m_even})
        graph->addToLegend(panelLegend);

    plotLayout()->setRowStretchFactor(0, 0.01);
    plotLayout()->setRowStretchFactor(1, 2.0);
    plotLayout()->setRowStretchFactor(2, 1.4);
    auto* group = new QCPMarginGroup(this);
    m_heatPanel->setMarginGroup(QCP::msLeft, group);
    m_balancePanel->setMarginGroup(QCP::msLeft, group);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    connect(this, &QCustomPlot::mouseMove, this, &RoutingCharts::showCellAt);
}

// Added with the first step that reports the loss: a run whose config does
// not set output_router_logits shows no empty panel.
void RoutingCharts::addAuxLossPanel()
{
    m_auxPanel = addStepPanel(this, 3, tr("router aux loss"));
    // The panel is short: more than three ticks crowd into one another.
    m_auxPanel->axis(QCPAxis::atLeft)->ticker()->setTickCount(3);
    plotLayout()->setRowStretchFactor(3, 1.0);
    m_auxPanel->setMarginGroup(QCP::msLeft, m_balancePanel->marginGroup(QCP::msLeft));
    m_balancePanel->axis(QCPAxis::atBottom)->setLabel(QString());
    m_auxPanel->axis(QCPAxis::atBottom)->setLabel(tr("optimizer step"));
    m_auxLoss = addGraph(m_auxPanel->axis(QCPAxis::atBottom), m_auxPanel->axis(QCPAxis::atLeft));
    m_auxLoss->setName(tr("router aux loss"));
    m_auxLoss->setPen(stepCurvePen(QColor(44, 160, 44)));
    m_auxLoss->removeFromLegend();
    // One step axis for both panels.
    QCPAxis* steps = m_balancePanel->axis(QCPAxis::atBottom);
    QCPAxis* auxSteps = m_auxPanel->axis(QCPAxis::atBottom);
    connect(steps, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), auxSteps,
        qOverload<const QCPRange&>(&QCPAxis::setRange));
    connect(auxSteps, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), steps,
        qOverload<const QCPRange&>(&QCPAxis::setRange));
}

void RoutingCharts::showHistory(const metrics::RunHistory& history)
{
    const std::vector<metrics::RoutingPoint>& points = history.routing();
    if (history.purges() != m_purgesSeen || points.size() < m_pointsShown) {
        // Steps were replaced (a resume): drawn again from the first.
        m_purgesSeen = history.purges();
        m_pointsShown = 0;
        m_highestRatio = 1;
        m_highestAuxLoss = 0;
        m_heatStep = -1;
        for (QCPGraph* graph : {m_worst, m_mean, m_auxLoss})
            if (graph)
                graph->data()->clear();
    }
    appendPoints(points);
    showLoads(history.latestExpertLoads());
    setStepRange(points);
    replot(QCustomPlot::rpQueuedReplot);
}

void RoutingCharts::appendPoints(const std::vector<metrics::RoutingPoint>& points)
{
    QVector<double> ratioSteps, worst, mean, auxSteps, auxLosses;
    for (; m_pointsShown < points.size(); ++m_pointsShown) {
        const metrics::RoutingPoint& point = points[m_pointsShown];
        if (point.worstLoadRatio >= 0) {
            ratioSteps.append(double(point.step));
            worst.append(point.worstLoadRatio);
            mean.append(point.meanLoadRatio);
            m_highestRatio = std::max(m_highestRatio, point.worstLoadRatio);
        }
        if (point.routerAuxLoss >= 0) {
            auxSteps.append(double(point.step));
            auxLosses.append(point.routerAuxLoss);
            m_highestAuxLoss = std::max(m_highestAuxLoss, point.routerAuxLoss);
        }
    }
    m_worst->addData(ratioSteps, worst, true);
    m_mean->addData(ratioSteps, mean, true);
    m_balancePanel->axis(QCPAxis::atLeft)->setRange(0, m_highestRatio * 1.08);
    if (auxSteps.isEmpty())
        return;
    if (!m_auxPanel)
        addAuxLossPanel();
    m_auxLoss->addData(auxSteps, auxLosses, true);
    m_auxPanel->axis(QCPAxis::atLeft)->setRange(0, m_highestAuxLoss * 1.08 + 1e-12);
}

void RoutingCharts::setStepRange(const std::vector<metrics::RoutingPoint>& points)
{
    if (points.empty())
        return;
    const double first = double(points.front().step);
    const double last = std::max(double(points.back().step), first + 1);
    m_even->setData({first, last}, {1.0, 1.0}, true);
    m_balancePanel->axis(QCPAxis::atBottom)->setRange(first, last); // moves the aux panel's too
}

void RoutingCharts::showLoads(const std::optional<metrics::ExpertLoads>& loads)
{
    if (!loads) {
        if (m_heatStep != -1 || !m_loads) {
            m_heat->data()->clear();
            m_loads.reset();
            m_heatStep = -1;
            m_title->setText(tr("Tokens per expert: waiting for the next step"));
        }
        return;
    }
    if (loads->step == m_heatStep)
        return;
    m_loads = loads;
    m_heatStep = loads->step;
    const int experts = loads->experts();
    const int layers = loads->layers();
    QCPColorMapData* cells = m_heat->data();
    cells->setSize(experts, layers);
    cells->setRange(cellRange(experts), cellRange(layers));
    int idle = 0;
    for (int layer = 0; layer < layers; ++layer) {
        const std::vector<int64_t>& row = loads->tokens[size_t(layer)];
        const double evenShare = layerTokens(row) / experts;
        for (int expert = 0; expert < experts; ++expert) {
            const double share = double(row[size_t(expert)]) / evenShare;
            idle += row[size_t(expert)] == 0 ? 1 : 0;
            cells->setCell(expert, layer, std::clamp(share, kShareLow, kShareHigh));
        }
    }
    m_heatPanel->axis(QCPAxis::atBottom)->setRange(-0.5, experts - 0.5);
    m_heatPanel->axis(QCPAxis::atLeft)->setRange(-0.5, layers - 0.5);
    const metrics::RoutingPoint point = metrics::routingPoint(*loads, -1);
    // Two lines: the page gives these charts about 40 % of its width.
    QString title = tr("Tokens per expert at step %1\nbusiest %2x its even share (layer %3)")
                        .arg(loads->step)
                        .arg(point.worstLoadRatio, 0, 'f', 2)
                        .arg(point.worstLayer);
    if (idle > 0)
        title += tr(", %n layer-expert pair(s) without a token", nullptr, idle);
    m_title->setText(title);
}

// A cell's own figures, which the colours give only to a factor.
void RoutingCharts::showCellAt(QMouseEvent* event)
{
    const QPoint at = event->pos();
    if (!m_loads || !m_heatPanel->rect().contains(at)) {
        QToolTip::hideText();
        return;
    }
    const long expert = std::lround(m_heatPanel->axis(QCPAxis::atBottom)->pixelToCoord(at.x()));
    const long layer = std::lround(m_heatPanel->axis(QCPAxis::atLeft)->pixelToCoord(at.y()));
    if (expert < 0 || expert >= m_loads->experts() || layer < 0 || layer >= m_loads->layers())
        return;
    const std::vector<int64_t>& row = m_loads->tokens[size_t(layer)];
    const double share = double(row[size_t(expert)]) * double(row.size()) / layerTokens(row);
    QToolTip::showText(event->globalPosition().toPoint(),
        tr("layer %1, expert %2: %3 tokens, %4x the even share")
            .arg(layer)
            .arg(expert)
            .arg(row[size_t(expert)])
            .arg(share, 0, 'f', 2),
        this);
}

int RoutingCharts::balancePointCount() const
{
    return m_worst->dataCount();
}
int RoutingCharts::auxLossPointCount() const
{
    return m_auxLoss ? m_auxLoss->dataCount() : 0;
}
QString RoutingCharts::title() const
{
    return m_title->text();
}

} // namespace tb::ui
