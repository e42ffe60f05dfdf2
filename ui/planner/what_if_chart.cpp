#include "planner/what_if_chart.h"

#include "common/units.h"
#include "planner/component_colors.h"

#include <algorithm>
#include <set>

namespace tb::ui {

namespace {

QString axisLabel(plan::SweepAxis axis)
{
    switch (axis) {
    case plan::SweepAxis::MicroBatch:
        return QObject::tr("micro-batch (samples per GPU)");
    case plan::SweepAxis::SeqLen:
        return QObject::tr("sequence length (tokens)");
    case plan::SweepAxis::GpuCount:
        return QObject::tr("GPUs in total");
    }
    return {};
}

// "micro-batch 128", "131072 tokens", "64 GPUs"
QString pointLabel(plan::SweepAxis axis, double value)
{
    const QString number = QString::number(value, 'f', 0);
    switch (axis) {
    case plan::SweepAxis::MicroBatch:
        return QObject::tr("micro-batch %1").arg(number);
    case plan::SweepAxis::SeqLen:
        return QObject::tr("%1 tokens").arg(number);
    case plan::SweepAxis::GpuCount:
        return QObject::tr("%1 GPUs").arg(number);
    }
    return number;
}

} // namespace

std::vector<long long> sweepValues(plan::SweepAxis axis, long long currentValue, int gpusPerVm)
{
    std::set<long long> values;
    switch (axis) {
    case plan::SweepAxis::MicroBatch:
        for (long long v : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128})
            values.insert(v);
        break;
    case plan::SweepAxis::SeqLen:
        for (long long v = 256; v <= 131072; v *= 2) {
            values.insert(v);
            if (v * 3 / 2 <= 131072)
                values.insert(v * 3 / 2);
        }
        break;
    case plan::SweepAxis::GpuCount:
        for (long long v = 1; v <= std::max(gpusPerVm, 1); v *= 2)
            values.insert(v);
        for (long long nodes = 1; nodes <= 16; ++nodes)
            values.insert(nodes * std::max(gpusPerVm, 1));
        break;
    }
    values.insert(std::max(currentValue, 1LL));
    return {values.begin(), values.end()};
}

WhatIfChart::WhatIfChart(QWidget* parent)
    : QCustomPlot(parent)
{
    setObjectName(QStringLiteral("whatIfChart"));
    setMinimumHeight(240);

    auto logTicker = QSharedPointer<QCPAxisTickerLog>::create();
    logTicker->setLogBase(2);
    logTicker->setSubTickCount(0);
    xAxis->setScaleType(QCPAxis::stLogarithmic);
    xAxis->setTicker(logTicker);
    xAxis->setNumberFormat(QStringLiteral("g"));
    yAxis->setLabel(tr("peak GiB per GPU"));
    yAxis2->setVisible(true);
    yAxis2->setLabel(tr("tokens/s (whole job)"));
    yAxis2->setTickLabelColor(throughputColor());
    yAxis2->setLabelColor(throughputColor());

    m_memory = addGraph(xAxis, yAxis);
    m_memory->setName(tr("peak memory per GPU"));
    m_memory->setPen(QPen(categoryColor(plan::MemoryCategory::Weights), 2));
    m_memory->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));

    m_overCapacity = addGraph(xAxis, yAxis);
    m_overCapacity->setName(tr("does not fit"));
    m_overCapacity->setLineStyle(QCPGraph::lsNone);
    m_overCapacity->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssDisc, overCapacityColor(), 8));

    m_throughput = addGraph(xAxis, yAxis2);
    m_throughput->setName(tr("tokens/s"));
    m_throughput->setPen(QPen(throughputColor(), 2, Qt::DotLine));
    m_throughput->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, 5));

    m_capacityLine = new QCPItemStraightLine(this);
    m_capacityLine->setPen(QPen(capacityColor(), 1.5, Qt::DashLine));
    // The x axis is logarithmic: place the horizontal lines by axis-rect
    // ratio in x, and the vertical marker by ratio in y.
    for (QCPItemPosition* point : {m_capacityLine->point1, m_capacityLine->point2})
        point->setTypeX(QCPItemPosition::ptAxisRectRatio);
    m_capacityLabel = new QCPItemText(this);
    m_capacityLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_capacityLabel->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    m_capacityLabel->position->setTypeY(QCPItemPosition::ptPlotCoords);
    m_offScaleLabel = new QCPItemText(this);
    m_offScaleLabel->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    m_offScaleLabel->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_offScaleLabel->position->setCoords(0.99, 0.01);
    m_offScaleLabel->setColor(overCapacityColor());
    m_offScaleLabel->setBrush(QColor(255, 255, 255, 210));
    m_currentLine = new QCPItemStraightLine(this);
    m_currentLine->setPen(QPen(QColor(0x80, 0x80, 0x80), 1, Qt::DotLine));
    for (QCPItemPosition* point : {m_currentLine->point1, m_currentLine->point2})
        point->setTypeY(QCPItemPosition::ptAxisRectRatio);

    legend->setVisible(true);
    legend->setBrush(QColor(255, 255, 255, 210));
    // Memory rises to the right, so the lower right corner is the empty one.
    axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
}

void WhatIfChart::setSweep(
    plan::SweepAxis axis, const std::vector<plan::SweepPoint>& points, long long currentValue)
{
    QVector<double> keys;
    QVector<double> memory;
    QVector<double> throughput;
    QVector<double> overKeys;
    QVector<double> overMemory;
    double usable = 0;
    double maxMemory = 0;
    double maxMemoryKey = 0;
    m_fitting = 0;
    for (const plan::SweepPoint& point : points) {
        const double key = double(point.value);
        const double gib = point.perGpuBytes / common::kGiB;
        keys << key;
        memory << gib;
        throughput << point.tokensPerSecond;
        usable = point.usableBytes / common::kGiB;
        if (gib > maxMemory) {
            maxMemory = gib;
            maxMemoryKey = key;
        }
        if (point.fits) {
            ++m_fitting;
        } else {
            overKeys << key;
            overMemory << gib;
        }
    }
    m_memory->setData(keys, memory, true);
    m_overCapacity->setData(overKeys, overMemory, true);
    m_throughput->setData(keys, throughput, true);

    m_capacityLine->point1->setCoords(0, usable);
    m_capacityLine->point2->setCoords(1, usable);
    // Above the line at the left: where small values usually fit, under it.
    m_capacityLabel->position->setCoords(0.01, usable);
    m_capacityLabel->setText(
        tr("usable %1").arg(QString::fromStdString(common::formatBytes(usable * common::kGiB))));
    m_currentLine->point1->setCoords(double(currentValue), 0);
    m_currentLine->point2->setCoords(double(currentValue), 1);

    xAxis->setLabel(axisLabel(axis));
    if (!keys.isEmpty())
        xAxis->setRange(keys.front() / 1.25, keys.back() * 1.25);
    // Memory past twice the capacity says nothing new; keep the line readable
    // and say in words how far the curve goes above the top.
    const double top = std::min(std::max(usable, maxMemory), 2.2 * std::max(usable, 1.0)) * 1.1;
    yAxis->setRange(0, top);
    const bool clipped = maxMemory > top;
    m_offScaleLabel->setVisible(clipped);
    m_offScaleLabel->setText(clipped
            ? tr("off the scale above: up to %1 at %2")
                  .arg(QString::fromStdString(common::formatBytes(maxMemory * common::kGiB)),
                      pointLabel(axis, maxMemoryKey))
            : QString());
    m_throughput->rescaleValueAxis(false, true);
    yAxis2->setRangeLower(0);
    yAxis2->setRangeUpper(yAxis2->range().upper * 1.1 + 1);
}

int WhatIfChart::pointCount() const
{
    return m_memory->dataCount();
}

int WhatIfChart::fittingPointCount() const
{
    return m_fitting;
}

QString WhatIfChart::offScaleNote() const
{
    return m_offScaleLabel->visible() ? m_offScaleLabel->text() : QString();
}

double WhatIfChart::capacityGiB() const
{
    return m_capacityLine->point1->coords().y();
}

} // namespace tb::ui
