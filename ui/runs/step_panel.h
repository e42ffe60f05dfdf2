#pragma once

#include <qcustomplot.h>

#include <QColor>
#include <QPen>
#include <QString>

namespace tb::ui {

// A panel of the Runs page's charts in row `row` of `plot`, its value axis
// labelled: dragged and zoomed along the steps only, as every curve there
// is over optimizer steps.
inline QCPAxisRect* addStepPanel(QCustomPlot* plot, int row, const QString& label)
{
    auto* panel = new QCPAxisRect(plot);
    plot->plotLayout()->addElement(row, 0, panel);
    panel->axis(QCPAxis::atLeft)->setLabel(label);
    panel->setRangeDrag(Qt::Horizontal);
    panel->setRangeZoom(Qt::Horizontal);
    return panel;
}

// One pixel wide, for the curves of a value per step. Qt strokes a wider
// pen as a polygon it then fills, which for a jagged curve (a routing or a
// loss that swings from step to step) costs tens to hundreds of
// milliseconds a replot; a one-pixel pen takes the raster engine's line
// drawer, a few milliseconds. A curve that must stand out does so by colour.
inline QPen stepCurvePen(const QColor& color, Qt::PenStyle style = Qt::SolidLine)
{
    return QPen(color, 1.0, style);
}

} // namespace tb::ui
