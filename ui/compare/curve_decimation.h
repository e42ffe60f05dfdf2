#pragma once

#include <qcustomplot.h>

#include <span>

namespace tb::ui {

// The points of one curve worth drawing in `columns` pixel columns over the
// keys [lower, upper]: where a column holds more than two points, its lowest
// and highest, in their order, so that the polyline covers the pixels the
// whole curve covers; elsewhere every point. One
// point on each side of the range is kept so the line enters and leaves
// the plot. Keys must be sorted ascending (steps, tokens, wall time).
struct DecimatedCurve {
    QVector<QCPGraphData> points;
    bool reduced = false; // some column's points were reduced to two
};
DecimatedCurve decimatedCurve(std::span<const double> keys, std::span<const double> values,
    double lower, double upper, int columns);

} // namespace tb::ui
