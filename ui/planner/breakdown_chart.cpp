#include "planner/breakdown_chart.h"

#include "common/units.h"
#include "planner/component_colors.h"

#include <QToolTip>

namespace tb::ui {

namespace {

constexpr double kBarKey = 1.0;
constexpr double kBarWidth = 0.55;

double toGiB(double bytes)
{
    return bytes / common::kGiB;
}

QString gib(double bytes)
{
    return QString::fromStdString(common::formatBytes(bytes));
}

plan::MemoryCategory categoryAt(int index)
{
    return static_cast<plan::MemoryCategory>(index);
}

} // namespace

BreakdownChart::BreakdownChart(QWidget* parent)
    : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("breakdownChart"));
    setMinimumHeight(190);
    setMouseTracking(true);

    // Horizontal bar: the key axis is the left one.
    QCPAxis* keyAxis = yAxis;
    QCPAxis* valueAxis = xAxis;
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    ticker->addTick(kBarKey, tr("per GPU"));
    keyAxis->setTicker(ticker);
    keyAxis->setRange(0.45, 1.55);
    keyAxis->grid()->setVisible(false);
    keyAxis->setTickLength(0, 0);
    valueAxis->setLabel(tr("GiB per GPU at the step's peak"));

    QCPBars* below = nullptr;
    for (int i = 0; i < plan::kMemoryCategoryCount; ++i) {
        auto* bars = new QCPBars(keyAxis, valueAxis);
        const plan::MemoryCategory category = categoryAt(i);
        bars->setName(QString::fromStdString(std::string(plan::categoryLabel(category))));
        bars->setBrush(categoryColor(category));
        bars->setPen(QPen(categoryColor(category).darker(130)));
        bars->setWidth(kBarWidth);
        if (below)
            bars->moveAbove(below);
        below = bars;
        m_segments[static_cast<size_t>(i)] = bars;
    }

    m_capacityLine = new QCPItemStraightLine(this);
    m_capacityLine->setPen(QPen(capacityColor(), 2, Qt::DashLine));
    m_capacityLabel = new QCPItemText(this);
    m_capacityLabel->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    m_capacityLabel->position->setTypeX(QCPItemPosition::ptPlotCoords);
    m_capacityLabel->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_capacityLabel->setPadding(QMargins(4, 2, 6, 2));
    m_capacityLabel->setBrush(QBrush(QColor(255, 255, 255, 220)));

    for (QCPItemLine*& mark : m_peakMarks) {
        mark = new QCPItemLine(this);
        mark->setPen(QPen(peakMarkColor(), 2));
        mark->start->setTypeY(QCPItemPosition::ptPlotCoords);
        mark->end->setTypeY(QCPItemPosition::ptPlotCoords);
    }
    m_peaksLabel = new QCPItemText(this);
    // Bottom left, clear of the capacity label at the top right.
    m_peaksLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_peaksLabel->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_peaksLabel->position->setCoords(0.01, 0.99);
    m_peaksLabel->setPadding(QMargins(4, 2, 4, 2));
    m_peaksLabel->setBrush(QBrush(QColor(255, 255, 255, 220)));

    // The legend to the right of the bar, one category a line with its
    // bytes, so it never covers a segment and every name stays whole.
    legend->setVisible(true);
    legend->setBorderPen(Qt::NoPen);
    legend->setIconSize(14, 10);
    legend->setRowSpacing(0);
    plotLayout()->addElement(0, 1, legend);
    plotLayout()->setColumnStretchFactor(1, 0.001);
    legend->setMargins(QMargins(8, 4, 4, 4));

    connect(this, &QCustomPlot::mouseMove, this, &BreakdownChart::showToolTipAt);
}

void BreakdownChart::setResult(const plan::PlanResult& result)
{
    m_result = result;
    for (int i = 0; i < plan::kMemoryCategoryCount; ++i) {
        const plan::MemoryCategory category = categoryAt(i);
        const double bytes = result.categoryBytes(category);
        QCPBars* bars = m_segments[static_cast<size_t>(i)];
        bars->setData(QVector<double>{kBarKey}, QVector<double>{toGiB(bytes)});
        bars->setName(QStringLiteral("%1  %2").arg(
            QString::fromStdString(std::string(plan::categoryLabel(category))), gib(bytes)));
    }

    const double usable = toGiB(result.usableBytes);
    const double total = toGiB(result.perGpuBytes);
    m_capacityLine->point1->setCoords(usable, 0);
    m_capacityLine->point2->setCoords(usable, 1);
    m_capacityLabel->position->setCoords(usable, 0.02);
    m_capacityLabel->setText(headroomText());
    m_capacityLabel->setColor(result.fits ? capacityColor() : overCapacityColor());
    xAxis->setRange(0, std::max(usable, total) * 1.08 + 0.01);

    // A tick from below the bar into it at each peak.
    const double barBottom = kBarKey - kBarWidth / 2;
    for (int i = 0; i < 3; ++i) {
        const double x = toGiB(result.peaks.at(static_cast<plan::PeakLevel>(i)));
        m_peakMarks[static_cast<size_t>(i)]->start->setCoords(x, barBottom - 0.12);
        m_peakMarks[static_cast<size_t>(i)]->end->setCoords(x, barBottom + 0.1);
    }
    m_peaksLabel->setText(peaksText());
}

QString BreakdownChart::peaksText() const
{
    return tr("peak allocated %1 · reserved %2 · device used %3")
        .arg(gib(m_result.peaks.allocated), gib(m_result.peaks.reserved),
            gib(m_result.peaks.deviceUsed));
}

double BreakdownChart::peakMarkGiB(plan::PeakLevel level) const
{
    return m_peakMarks[static_cast<size_t>(level)]->start->coords().x();
}

double BreakdownChart::segmentGiB(plan::MemoryCategory category) const
{
    const QCPBars* bars = m_segments[static_cast<size_t>(category)];
    return bars->data()->isEmpty() ? 0.0 : bars->data()->constBegin()->value;
}

double BreakdownChart::capacityGiB() const
{
    return m_capacityLine->point1->coords().x();
}

QString BreakdownChart::headroomText() const
{
    const QString usable = gib(m_result.usableBytes);
    if (m_result.fits)
        return tr("usable %1 · headroom %2").arg(usable, gib(m_result.headroomBytes));
    return tr("usable %1 · short by %2").arg(usable, gib(-m_result.headroomBytes));
}

QString BreakdownChart::segmentToolTip(plan::MemoryCategory category) const
{
    QString text = QStringLiteral("<b>%1: %2</b>")
                       .arg(QString::fromStdString(std::string(plan::categoryLabel(category))),
                           gib(m_result.categoryBytes(category)));
    for (const plan::MemoryComponent& component : m_result.memory) {
        if (component.category != category || component.bytes <= 0)
            continue;
        text +=
            QStringLiteral("<br><b>%1</b> %2<br>&nbsp;&nbsp;%3<br>&nbsp;&nbsp;<i>%4</i>")
                .arg(QString::fromStdString(component.label).toHtmlEscaped(), gib(component.bytes),
                    QString::fromStdString(component.explanation).toHtmlEscaped(),
                    QString::fromStdString(component.source).toHtmlEscaped());
    }
    return text;
}

void BreakdownChart::showToolTipAt(QMouseEvent* event)
{
    for (int i = 0; i < plan::kMemoryCategoryCount; ++i) {
        QCPBars* bars = m_segments[static_cast<size_t>(i)];
        const double distance = bars->selectTest(event->position(), false);
        if (distance >= 0) { // inside a segment
            QToolTip::showText(
                event->globalPosition().toPoint(), segmentToolTip(categoryAt(i)), this);
            return;
        }
    }
    QToolTip::hideText();
}

} // namespace tb::ui
