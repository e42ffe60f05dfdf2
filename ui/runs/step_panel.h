#pragma once

#include <qcustomplot.h>

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

} // namespace tb::ui
