#include "compare/overlay_charts.h"

#include "compare/curve_decimation.h"
#include "compare/run_colors.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tb::ui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

QString xLabel(metrics::XAxis axis)
{
    switch (axis) {
    case metrics::XAxis::Tokens:
        return QObject::tr("tokens seen");
    case metrics::XAxis::WallSeconds:
        return QObject::tr("wall time since the run started (s)");
    case metrics::XAxis::Step:
        break;
    }
    return QObject::tr("optimizer step");
}

// The figure a panel plots for a step; negative or not finite: not known.
double valueIn(OverlayCharts::Panel panel, const metrics::StepRecord& step)
{
    switch (panel) {
    case OverlayCharts::LossPanel:
        return step.loss;
    case OverlayCharts::LearningRatePanel:
        return step.learningRate;
    case OverlayCharts::ThroughputPanel:
        return step.tokensPerSecond;
    case OverlayCharts::MemoryPanel:
        return double(step.memPeakBytes >= 0 ? step.memPeakBytes : step.memAllocatedBytes) / kGiB;
    case OverlayCharts::PanelCount:
        break;
    }
    return -1;
}

bool smoothedPanel(OverlayCharts::Panel panel)
{
    return panel == OverlayCharts::LossPanel || panel == OverlayCharts::ThroughputPanel;
}

// The known points of one panel, smoothed where the panel is.
void fillCurve(std::vector<double>& keys, std::vector<double>& values, const std::vector<double>& x,
    const metrics::RunHistory& history, OverlayCharts::Panel panel, double smoothing)
{
    keys.clear();
    values.clear();
    keys.reserve(x.size());
    values.reserve(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const double value = valueIn(panel, history.steps()[i]);
        if (value >= 0 && std::isfinite(value)) {
            keys.push_back(x[i]);
            values.push_back(value);
        }
    }
    if (smoothedPanel(panel))
        values = metrics::smoothed(values, smoothing);
}

// Every run's whole curves, run by run, a panel after another; nothing once
// `cancelled` is set (looked at between runs). Reads only `runs`, so a job
// on the pool may make them.
std::optional<std::vector<CurveSeries>> curvesOf(const QVector<ComparedRun>& runs,
    metrics::XAxis axis, double smoothing, const std::atomic<bool>* cancelled)
{
    std::vector<CurveSeries> curves(size_t(runs.size() * OverlayCharts::PanelCount));
    for (qsizetype r = 0; r < runs.size(); ++r) {
        if (cancelled && cancelled->load(std::memory_order_relaxed))
            return std::nullopt;
        const metrics::RunHistory& history = *runs[r].history;
        const std::vector<double> x = metrics::stepPositions(history, axis);
        for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
            CurveSeries& series = curves[size_t(r * OverlayCharts::PanelCount + p)];
            fillCurve(series.keys, series.values, x, history, OverlayCharts::Panel(p), smoothing);
        }
    }
    return curves;
}

} // namespace

OverlayCharts::OverlayCharts(QWidget* parent)
    : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("overlayCharts"));
    setMinimumHeight(420);
    plotLayout()->clear();
    // Each panel's legend lists only the graphs added to it by hand.
    setAutoAddPlottableToLegend(false);
    const QString labels[PanelCount] = {
        tr("loss (nats/token)"), tr("learning rate"), tr("tokens/s"), tr("peak memory (GiB)")};
    auto* group = new QCPMarginGroup(this);
    for (int p = 0; p < PanelCount; ++p) {
        m_panels[p] = new QCPAxisRect(this);
        plotLayout()->addElement(p, 0, m_panels[p]);
        m_panels[p]->axis(QCPAxis::atLeft)->setLabel(labels[p]);
        m_panels[p]->setRangeDrag(Qt::Horizontal);
        m_panels[p]->setRangeZoom(Qt::Horizontal);
        m_panels[p]->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    }
    // Each panel's curves are drawn by its canvas, just above the grid, from
    // an image kept until they change; the graphs sit on a hidden layer so
    // that QCustomPlot does not draw them a second time.
    addLayer(QStringLiteral("curves"), layer(QStringLiteral("grid")), QCustomPlot::limAbove);
    addLayer(QStringLiteral("curveData"), layer(QStringLiteral("curves")), QCustomPlot::limAbove);
    layer(QStringLiteral("curveData"))->setVisible(false);
    for (int p = 0; p < PanelCount; ++p) {
        m_canvases[p] = new CurveCanvas(m_panels[p], QStringLiteral("curves"));
        m_canvases[p]->setPrepare([this](bool exact) { return prepareCurves(exact); });
        m_canvases[p]->setRenderGate([this] { return takeRenderTurn(); });
    }
    connect(this, &QCustomPlot::beforeReplot, this, [this] { m_rendersThisReplot = 0; });
    connect(this, &QCustomPlot::afterReplot, this, [this] {
        if (std::exchange(m_renderRefused, false))
            replot(QCustomPlot::rpQueuedReplot); // the panels left waiting
    });
    connect(
        &m_decimator, &BackgroundDecimator::decimated, this, &OverlayCharts::decimatedInBackground);
    connect(&m_decimator, &BackgroundDecimator::built, this, &OverlayCharts::builtInBackground);
    // One x-axis: panning or zooming one panel moves the others.
    for (QCPAxisRect* panel : m_panels) {
        for (QCPAxisRect* other : m_panels) {
            if (other != panel)
                connect(panel->axis(QCPAxis::atBottom),
                    qOverload<const QCPRange&>(&QCPAxis::rangeChanged),
                    other->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::setRange));
        }
    }
    connect(this, &QCustomPlot::mouseDoubleClick, this, &OverlayCharts::fitView);
    m_panels[MemoryPanel]->axis(QCPAxis::atBottom)->setLabel(xLabel(m_xAxis));
    auto* legendBox = new QCPLegend;
    m_panels[LossPanel]->insetLayout()->addElement(legendBox, Qt::AlignTop | Qt::AlignRight);
    legendBox->setLayer(QStringLiteral("legend"));
    legendBox->setFont(font());
    legendBox->setObjectName(QStringLiteral("runsLegend"));
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
}

void OverlayCharts::ensureGraphs(int runs)
{
    auto* legendBox = qobject_cast<QCPLegend*>(m_panels[LossPanel]->insetLayout()->elementAt(0));
    while (m_graphs.size() < runs) {
        std::array<CanvasGraph*, PanelCount + 1> graphs{};
        for (int p = 0; p <= PanelCount; ++p) {
            QCPAxisRect* panel =
                m_panels[p == PanelCount ? LossPanel : p]; // validation: with the loss
            graphs[size_t(p)] =
                new CanvasGraph(panel->axis(QCPAxis::atBottom), panel->axis(QCPAxis::atLeft));
            graphs[size_t(p)]->setLayer(QStringLiteral("curveData"));
        }
        // The graphs hold at most two points a pixel column already
        // (prepareCurves()); QCustomPlot's own sampling would walk them again on
        // each draw and could merge what the decimation kept.
        for (CanvasGraph* graph : graphs)
            graph->setAdaptiveSampling(false);
        QCPGraph* validation = graphs[PanelCount];
        validation->setLineStyle(QCPGraph::lsNone);
        graphs[LossPanel]->addToLegend(legendBox);
        m_graphs.append(graphs);
    }
    while (m_graphs.size() > runs) {
        for (QCPGraph* graph : m_graphs.last())
            removeGraph(graph);
        m_graphs.removeLast();
    }
    // Drawn in the order QCustomPlot drew them: run by run, a run's
    // validation points over its loss.
    for (int p = 0; p < PanelCount; ++p) {
        QVector<CanvasGraph*> graphs;
        for (const auto& run : m_graphs) {
            graphs.append(run[size_t(p)]);
            if (p == LossPanel)
                graphs.append(run[PanelCount]);
        }
        m_canvases[p]->setGraphs(graphs);
    }
}

void OverlayCharts::invalidateCanvases()
{
    for (CurveCanvas* canvas : m_canvases)
        canvas->invalidate();
}

QCPRange OverlayCharts::wholeKeyRange() const
{
    return keyRangeOf(*m_curves, keyAxis()->range());
}

DecimationRequest OverlayCharts::currentRequest() const
{
    return {m_curves, keyAxis()->range(), std::max(1, m_panels[LossPanel]->width())};
}

bool OverlayCharts::prepareCurves(bool exact)
{
    const DecimationRequest request = currentRequest();
    if (request == m_decimated)
        return true;
    if (m_background && !exact) {
        // A build on its way brings the curves of a view that follows the
        // runs; a view the user holds, or another width, wants the curves
        // of the runs shown till then.
        if (!m_decimator.isBuilding() || !followsRuns() || request.columns != m_columnsAsked)
            m_decimator.request(request);
        return false;
    }
    m_decimator.cancel();
    const auto curves =
        decimatedCurves(*m_curves, request.range.lower, request.range.upper, request.columns);
    applyDecimation(request, *curves);
    return true;
}

bool OverlayCharts::takeRenderTurn()
{
    // Drawing 50 runs' curves takes about 10 ms a panel: four at once would
    // hold the UI thread 40 ms when a pan's curves arrive.
    if (!m_background || m_rendersThisReplot == 0) {
        ++m_rendersThisReplot;
        return true;
    }
    m_renderRefused = true;
    return false;
}

void OverlayCharts::applyDecimation(
    const DecimationRequest& request, const std::vector<DecimatedCurve>& curves)
{
    // The canvases see their view change and draw the new points then: the
    // images stay valid pictures of the previous view meanwhile.
    m_decimated = request;
    ++m_decimations;
    for (qsizetype r = 0; r < m_graphs.size(); ++r)
        for (int p = 0; p < PanelCount; ++p) {
            const DecimatedCurve& curve = curves[size_t(r * PanelCount + p)];
            QCPGraph* graph = m_graphs[r][size_t(p)];
            graph->data()->set(curve.points, true);
            // A reduced curve is a vertical stroke a column: antialiasing it
            // doubles the repaint and changes no pixel worth seeing.
            graph->setAntialiased(!curve.reduced);
        }
}

void OverlayCharts::decimatedInBackground(
    const DecimationRequest& request, const std::vector<DecimatedCurve>& curves)
{
    // The view may have moved since the replot that asked (its own replot,
    // queued, asks again); curves of runs since replaced are never applied.
    if (!(request == currentRequest()))
        return;
    applyDecimation(request, curves);
    emit curvesDecimated();
    replot(QCustomPlot::rpQueuedReplot);
}

void OverlayCharts::setBackgroundDecimation(bool on)
{
    m_background = on;
    if (!on)
        m_decimator.cancel();
    if (!on && m_decimator.isBuilding())
        redraw(); // the runs the build was making
    else
        replot(QCustomPlot::rpQueuedReplot);
}

void OverlayCharts::setRuns(const QVector<ComparedRun>& runs)
{
    m_runs = runs;
    if (m_background)
        buildInBackground();
    else
        redraw();
}

void OverlayCharts::setXAxis(metrics::XAxis axis)
{
    m_xAxis = axis;
    m_fittedKeys.reset(); // a range of other units
    m_panels[MemoryPanel]->axis(QCPAxis::atBottom)->setLabel(xLabel(axis));
    redraw();
}

void OverlayCharts::setSmoothing(double weight)
{
    m_smoothing = weight;
    redraw();
}

void OverlayCharts::setLogLoss(bool logarithmic)
{
    m_logLoss = logarithmic;
    QCPAxis* axis = m_panels[LossPanel]->axis(QCPAxis::atLeft);
    axis->setScaleType(logarithmic ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (logarithmic)
        axis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    else
        axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    redraw();
}

void OverlayCharts::showRuns(const QVector<ComparedRun>& runs)
{
    ensureGraphs(int(runs.size()));
    m_shownDirs.clear();
    for (qsizetype r = 0; r < runs.size(); ++r) {
        const metrics::RunHistory& history = *runs[r].history;
        const QColor color = runColor(int(r));
        const QString name =
            history.start() ? QString::fromStdString(history.start()->runId) : runs[r].dir;
        m_shownDirs.append(runs[r].dir);
        for (int p = 0; p < PanelCount; ++p) {
            QCPGraph* graph = m_graphs[r][size_t(p)];
            // Width 1: Qt's fast path for polylines. Wider pens go through
            // its stroker, which made a repaint of 50 long runs take seconds.
            graph->setPen(QPen(color, 1));
            graph->setName(name);
        }
        QCPGraph* validation = m_graphs[r][PanelCount];
        validation->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, color, 7));
        validation->setName(tr("%1, validation").arg(name));
        const std::vector<double> evalX = metrics::evalPositions(history, m_xAxis);
        QVector<double> keys(evalX.begin(), evalX.end()), losses;
        for (const metrics::EvalPoint& point : history.evals())
            losses.append(point.loss);
        validation->setData(keys, losses);
    }
}

void OverlayCharts::redraw()
{
    m_decimator.cancelBuild(); // what it would show is made here
    const std::optional<QCPRange> held = heldView(m_runs);
    showRuns(m_runs);
    m_curves = std::make_shared<const std::vector<CurveSeries>>(
        *curvesOf(m_runs, m_xAxis, m_smoothing, nullptr));
    invalidateCanvases();
    // The whole range first, so the ranges fitted below see every extreme.
    keyAxis()->setRange(wholeKeyRange());
    prepareCurves(true);
    fitRanges(held);
    prepareCurves(true);
    replot(QCustomPlot::rpQueuedReplot);
}

void OverlayCharts::buildInBackground()
{
    // The job holds the runs' histories, immutable, and nothing of this
    // object's; until it answers, the panels show what they showed.
    m_columnsAsked = std::max(1, m_panels[LossPanel]->width());
    // A view the user holds over these runs keeps its job: its curves stand
    // in till the build's. Otherwise the build brings the curves to show.
    if (!heldView(m_runs))
        m_decimator.cancel();
    m_decimator.build({m_runs,
        [axis = m_xAxis, smoothing = m_smoothing](
            const QVector<ComparedRun>& runs, const std::atomic<bool>* cancelled) {
            return curvesOf(runs, axis, smoothing, cancelled);
        },
        keyAxis()->range(), m_columnsAsked});
}

void OverlayCharts::builtInBackground(const QVector<ComparedRun>& runs,
    const DecimationRequest& request, const std::vector<DecimatedCurve>& curves)
{
    m_decimator.cancel(); // a pan's job over the curves replaced
    const std::optional<QCPRange> held = heldView(runs);
    showRuns(runs);
    m_curves = request.curves;
    for (CurveCanvas* canvas : m_canvases)
        canvas->markStale();
    keyAxis()->setRange(request.range);
    applyDecimation(request, curves);
    fitRanges(held);
    // The range fitted (validation points past the last step widen it) or
    // held, or a width laid out since the build was asked for, needs other
    // points: asked for now, since the next build would miss them the same
    // way, and so that isDecimating() holds until they come.
    if (const DecimationRequest view = currentRequest(); !(view == m_decimated))
        m_decimator.request(view);
    emit curvesDecimated();
    replot(QCustomPlot::rpQueuedReplot);
}

bool OverlayCharts::followsRuns() const
{
    return !m_fittedKeys || keyAxis()->range() == *m_fittedKeys;
}

std::optional<QCPRange> OverlayCharts::heldView(const QVector<ComparedRun>& runs) const
{
    const bool sameRuns =
        std::equal(runs.begin(), runs.end(), m_shownDirs.begin(), m_shownDirs.end(),
            [](const ComparedRun& run, const QString& dir) { return run.dir == dir; });
    if (followsRuns() || !sameRuns)
        return std::nullopt;
    return keyAxis()->range();
}

void OverlayCharts::fitView()
{
    fitKeyRange();
    replot(QCustomPlot::rpQueuedReplot);
}

void OverlayCharts::fitRanges(const std::optional<QCPRange>& held)
{
    fitValueRanges();
    fitKeyRange();
    if (held)
        keyAxis()->setRange(*held);
}

void OverlayCharts::fitKeyRange()
{
    // Every step, from the whole curves (the graphs may hold a zoom's), and
    // every validation point.
    std::optional<QCPRange> keys;
    const auto include = [&keys](const QCPRange& range) {
        keys = keys
            ? QCPRange(std::min(keys->lower, range.lower), std::max(keys->upper, range.upper))
            : range;
    };
    if (std::any_of(m_curves->begin(), m_curves->end(),
            [](const CurveSeries& s) { return !s.keys.empty(); }))
        include(wholeKeyRange());
    for (const auto& graphs : m_graphs) {
        bool found = false;
        const QCPRange validation = graphs[PanelCount]->getKeyRange(found);
        if (found)
            include(validation);
    }
    if (keys)
        keyAxis()->setRange(keys->lower, std::max(keys->upper, keys->lower + 1));
    m_fittedKeys = keyAxis()->range();
}

void OverlayCharts::fitValueRanges()
{
    for (int p = 0; p < PanelCount; ++p) {
        QCPAxis* axis = m_panels[p]->axis(QCPAxis::atLeft);
        const bool logarithmic = p == LossPanel && m_logLoss;
        bool any = false;
        QCPRange values;
        for (const auto& graphs : m_graphs) {
            for (QCPGraph* graph :
                {graphs[size_t(p)], p == LossPanel ? graphs[PanelCount] : nullptr}) {
                bool found = false;
                const QCPRange range =
                    graph ? graph->getValueRange(found, QCP::sdBoth) : QCPRange();
                if (found)
                    values = any ? QCPRange(std::min(values.lower, range.lower),
                                 std::max(values.upper, range.upper))
                                 : range;
                any = any || found;
            }
        }
        if (!any)
            continue;
        if (logarithmic)
            axis->setRange(std::max(values.lower, 1e-6) / 1.2, values.upper * 1.2);
        else
            axis->setRange(0, values.upper * 1.08 + 1e-12);
    }
}

QCPGraph* OverlayCharts::curve(int run, Panel panel) const
{
    return run >= 0 && run < m_graphs.size() ? m_graphs[run][size_t(panel)] : nullptr;
}

QCPGraph* OverlayCharts::evalPoints(int run) const
{
    return run >= 0 && run < m_graphs.size() ? m_graphs[run][PanelCount] : nullptr;
}

} // namespace tb::ui
