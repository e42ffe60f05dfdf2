#include "compare/preference_overlay.h"

#include "compare/run_colors.h"
#include "runs/step_panel.h"

#include <algorithm>
#include <cmath>

namespace tb::ui {

PreferenceOverlay::PreferenceOverlay(QWidget* parent)
    : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("preferenceOverlay"));
    plotLayout()->clear();
    m_marginPanel = addStepPanel(this, 0, tr("reward margin (nats)"));
    m_accuracyPanel = addStepPanel(this, 1, tr("accuracy (% of pairs)"));
    m_accuracyPanel->axis(QCPAxis::atBottom)->setLabel(tr("optimizer step"));
    m_accuracyPanel->axis(QCPAxis::atLeft)->setRange(-4, 104);
    auto* group = new QCPMarginGroup(this);
    for (QCPAxisRect* panel : {m_marginPanel, m_accuracyPanel})
        panel->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    // One step axis: panning or zooming one panel moves the other.
    QCPAxis* marginSteps = m_marginPanel->axis(QCPAxis::atBottom);
    QCPAxis* accuracySteps = m_accuracyPanel->axis(QCPAxis::atBottom);
    connect(marginSteps, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), accuracySteps,
        qOverload<const QCPRange&>(&QCPAxis::setRange));
    connect(accuracySteps, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), marginSteps,
        qOverload<const QCPRange&>(&QCPAxis::setRange));
    m_legend = new QCPLegend;
    m_marginPanel->insetLayout()->addElement(m_legend, Qt::AlignTop | Qt::AlignLeft);
    m_legend->setLayer(QStringLiteral("legend"));
    m_legend->setFont(font());
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
}

void PreferenceOverlay::setRuns(const QVector<ComparedRun>& runs)
{
    QVector<QPair<QString, int>> places;
    for (qsizetype r = 0; r < runs.size(); ++r)
        if (runs[r].preference)
            places.append({runs[r].dir, int(r)});
    if (places != m_places) {
        clearGraphs();
        m_margins.clear();
        m_accuracies.clear();
        m_drawn.clear();
        m_places = places;
        for (const auto& [dir, r] : places)
            addRun(runs[r], runColor(r)); // the run's colour on every tab
    } else {
        for (int i = 0; i < places.size(); ++i)
            if (runs[places[i].second].preference != m_drawn[i])
                fill(i, *runs[places[i].second].preference);
    }
    for (int i = 0; i < places.size(); ++i)
        m_drawn[i] = runs[places[i].second].preference;
    fitRanges();
    if (isVisible())
        replot(QCustomPlot::rpQueuedReplot);
}

void PreferenceOverlay::addRun(const ComparedRun& run, const QColor& color)
{
    const QString name =
        run.history->start() ? QString::fromStdString(run.history->start()->runId) : run.dir;
    QCPGraph* margin =
        addGraph(m_marginPanel->axis(QCPAxis::atBottom), m_marginPanel->axis(QCPAxis::atLeft));
    QCPGraph* accuracy =
        addGraph(m_accuracyPanel->axis(QCPAxis::atBottom), m_accuracyPanel->axis(QCPAxis::atLeft));
    for (QCPGraph* graph : {margin, accuracy}) {
        graph->setPen(stepCurvePen(color));
        graph->setName(name);
        graph->removeFromLegend();
    }
    margin->addToLegend(m_legend);
    m_margins.append(margin);
    m_accuracies.append(accuracy);
    m_drawn.append(run.preference);
    fill(int(m_margins.size()) - 1, *run.preference);
}

void PreferenceOverlay::fill(int index, const metrics::PreferenceHistory& preference)
{
    QVector<double> steps, margins, accuracies;
    for (const metrics::PreferencePoint& point : preference.points()) {
        steps.append(double(point.step));
        margins.append(point.rewardsMargin); // NaN: a gap
        accuracies.append(point.rewardsAccuracy * 100.0);
    }
    m_margins[index]->setData(steps, margins, true);
    m_accuracies[index]->setData(steps, accuracies, true);
}

void PreferenceOverlay::fitRanges()
{
    QCPRange steps(1, 2), margins(0, 0);
    bool any = false;
    for (QCPGraph* graph : m_margins) {
        bool found = false;
        const QCPRange keys = graph->getKeyRange(found);
        if (found) {
            steps = any
                ? QCPRange(std::min(steps.lower, keys.lower), std::max(steps.upper, keys.upper))
                : keys;
            any = true;
        }
        const QCPRange values = graph->getValueRange(found);
        if (found)
            margins.expand(values);
    }
    m_marginPanel->axis(QCPAxis::atBottom)
        ->setRange(steps.lower, std::max(steps.upper, steps.lower + 1));
    const double pad = std::max(margins.size() * 0.08, 1e-3);
    m_marginPanel->axis(QCPAxis::atLeft)->setRange(margins.lower - pad, margins.upper + pad);
}

void PreferenceOverlay::showEvent(QShowEvent* event)
{
    QCustomPlot::showEvent(event);
    replot(QCustomPlot::rpQueuedReplot); // runs given while hidden
}

} // namespace tb::ui
