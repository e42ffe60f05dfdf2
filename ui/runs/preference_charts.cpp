#include "runs/preference_charts.h"

#include "runs/step_panel.h"

#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace tb::ui {

namespace {

using metrics::PreferencePoint;

// A figure as the panels' labels give it; "n/a" where the step's was not finite.
QString figure(double value, int decimals = 3)
{
    return std::isfinite(value) ? QString::number(value, 'f', decimals) : QStringLiteral("n/a");
}

QString percent(double share)
{
    return std::isfinite(share) ? QString::number(share * 100.0, 'f', 0) + QStringLiteral(" %")
                                : QStringLiteral("n/a");
}

// One step's figures in three lines, for the title and the tooltip alike.
QString describe(const PreferencePoint& point)
{
    return PreferenceCharts::tr(
        "DPO at step %1: reward margin %2, accuracy %3\n"
        "rewards: chosen %4, rejected %5 (\u03b2 \u00d7 log-ratio to the reference, nats)\n"
        "log p chosen %6 (reference %7), rejected %8 (reference %9), nats")
        .arg(point.step)
        .arg(figure(point.rewardsMargin), percent(point.rewardsAccuracy),
            figure(point.rewardsChosen), figure(point.rewardsRejected),
            figure(point.logpsChosen, 2), figure(point.refLogpsChosen, 2),
            figure(point.logpsRejected, 2), figure(point.refLogpsRejected, 2));
}

void include(QCPRange& span, double value)
{
    if (std::isfinite(value)) {
        span.lower = std::min(span.lower, value);
        span.upper = std::max(span.upper, value);
    }
}

// `span` with a margin, never empty: a first step's rewards are all 0.
QCPRange padded(const QCPRange& span)
{
    const double pad = std::max(span.size() * 0.08, 1e-3);
    return QCPRange(span.lower - pad, span.upper + pad);
}

// In the corner the first steps leave free: every figure starts at 0 (the
// adapter starts as the reference), rewards mostly fall from there and the
// margin rises; the newest steps at the right are never covered.
void addLegend(QCPAxisRect* panel, const QFont& font, Qt::Alignment corner,
    std::initializer_list<QCPGraph*> graphs)
{
    auto* legend = new QCPLegend;
    panel->insetLayout()->addElement(legend, corner);
    legend->setLayer(QStringLiteral("legend"));
    legend->setFont(font);
    for (QCPGraph* graph : graphs)
        graph->addToLegend(legend);
}

} // namespace

PreferenceCharts::PreferenceCharts(QWidget* parent)
    : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("preferenceCharts"));
    setMinimumSize(360, 360);
    plotLayout()->clear();
    m_title = new QCPTextElement(this, QString(), font());
    plotLayout()->addElement(0, 0, m_title);
    m_rewardsPanel = addStepPanel(this, 1, tr("reward (nats)"));
    m_marginPanel = addStepPanel(this, 2, tr("reward margin (nats)"));
    m_accuracyPanel = addStepPanel(this, 3, tr("accuracy (% of pairs)"));
    m_accuracyPanel->axis(QCPAxis::atBottom)->setLabel(tr("optimizer step"));
    m_accuracyPanel->axis(QCPAxis::atLeft)->setRange(-4, 104);

    const auto graphIn = [this](QCPAxisRect* panel, const QString& name, const QColor& color) {
        QCPGraph* graph = addGraph(panel->axis(QCPAxis::atBottom), panel->axis(QCPAxis::atLeft));
        graph->setName(name);
        graph->setPen(stepCurvePen(color));
        return graph;
    };
    m_chosen = graphIn(m_rewardsPanel, tr("chosen"), QColor(44, 160, 44));
    m_rejected = graphIn(m_rewardsPanel, tr("rejected"), QColor(214, 39, 40));
    m_margin = graphIn(m_marginPanel, tr("margin (chosen - rejected)"), QColor(31, 119, 180));
    m_accuracy = graphIn(m_accuracyPanel, tr("accuracy"), QColor(148, 103, 189));
    addLegend(m_rewardsPanel, font(), Qt::AlignBottom | Qt::AlignLeft, {m_chosen, m_rejected});
    addLegend(m_marginPanel, font(), Qt::AlignTop | Qt::AlignLeft, {m_margin});

    // One step axis: panning or zooming one panel moves the others.
    auto* group = new QCPMarginGroup(this);
    const std::initializer_list<QCPAxisRect*> panels{
        m_rewardsPanel, m_marginPanel, m_accuracyPanel};
    for (QCPAxisRect* panel : panels) {
        panel->setMarginGroup(QCP::msLeft | QCP::msRight, group);
        for (QCPAxisRect* other : panels)
            if (other != panel)
                connect(panel->axis(QCPAxis::atBottom),
                    qOverload<const QCPRange&>(&QCPAxis::rangeChanged),
                    other->axis(QCPAxis::atBottom), qOverload<const QCPRange&>(&QCPAxis::setRange));
    }
    plotLayout()->setRowStretchFactor(0, 0.01);
    plotLayout()->setRowStretchFactor(1, 1.4);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    connect(this, &QCustomPlot::mouseMove, this, &PreferenceCharts::showFiguresAt);
}

void PreferenceCharts::showHistory(
    const metrics::RunHistory& history, const metrics::PreferenceHistory& preference)
{
    m_shown = &preference;
    const std::vector<PreferencePoint>& points = preference.points();
    const bool purged = history.purges() != m_purgesSeen || points.size() < m_pointsShown;
    if (purged) {
        // Steps were replaced (a resume): drawn again from the first.
        m_purgesSeen = history.purges();
        m_pointsShown = 0;
        m_rewardsSpan = m_marginSpan = QCPRange(0, 0);
        for (QCPGraph* graph : {m_chosen, m_rejected, m_margin, m_accuracy})
            graph->data()->clear();
    } else if (points.size() == m_pointsShown) {
        return; // nothing new: no replot
    }
    if (!points.empty()) {
        appendPoints(points);
        setRanges(points);
    }
    m_title->setText(points.empty() ? tr("DPO: waiting for a step") : describe(points.back()));
    replot(QCustomPlot::rpQueuedReplot);
}

// NaN figures go in as they are: QCustomPlot leaves a gap there.
void PreferenceCharts::appendPoints(const std::vector<PreferencePoint>& points)
{
    QVector<double> steps, chosen, rejected, margins, accuracies;
    for (; m_pointsShown < points.size(); ++m_pointsShown) {
        const PreferencePoint& point = points[m_pointsShown];
        steps.append(double(point.step));
        chosen.append(point.rewardsChosen);
        rejected.append(point.rewardsRejected);
        margins.append(point.rewardsMargin);
        accuracies.append(point.rewardsAccuracy * 100.0);
        include(m_rewardsSpan, point.rewardsChosen);
        include(m_rewardsSpan, point.rewardsRejected);
        include(m_marginSpan, point.rewardsMargin);
    }
    m_chosen->addData(steps, chosen, true);
    m_rejected->addData(steps, rejected, true);
    m_margin->addData(steps, margins, true);
    m_accuracy->addData(steps, accuracies, true);
}

void PreferenceCharts::setRanges(const std::vector<PreferencePoint>& points)
{
    const double first = double(points.front().step);
    const double last = std::max(double(points.back().step), first + 1);
    m_accuracyPanel->axis(QCPAxis::atBottom)->setRange(first, last); // moves the others' too
    m_rewardsPanel->axis(QCPAxis::atLeft)->setRange(padded(m_rewardsSpan));
    m_marginPanel->axis(QCPAxis::atLeft)->setRange(padded(m_marginSpan));
}

QString PreferenceCharts::describeStepNear(double step) const
{
    if (!m_shown || m_pointsShown == 0)
        return {};
    const std::vector<PreferencePoint>& points = m_shown->points();
    const auto end = points.begin() + ptrdiff_t(std::min(m_pointsShown, points.size()));
    auto after = std::lower_bound(points.begin(), end, step,
        [](const PreferencePoint& point, double at) { return double(point.step) < at; });
    if (after == end
        || (after != points.begin()
            && step - double((after - 1)->step) < double(after->step) - step))
        --after;
    return describe(*after);
}

void PreferenceCharts::showFiguresAt(QMouseEvent* event)
{
    const QPoint at = event->pos();
    for (QCPAxisRect* panel : {m_rewardsPanel, m_marginPanel, m_accuracyPanel}) {
        if (panel->rect().contains(at)) {
            const double step = panel->axis(QCPAxis::atBottom)->pixelToCoord(at.x());
            QToolTip::showText(event->globalPosition().toPoint(), describeStepNear(step), this);
            return;
        }
    }
    QToolTip::hideText();
}

QString PreferenceCharts::title() const
{
    return m_title->text();
}

} // namespace tb::ui
