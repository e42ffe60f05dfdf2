#pragma once

#include <qcustomplot.h>

#include <atomic>
#include <optional>
#include <span>
#include <vector>

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

// One curve kept whole: what decimatedCurve() reads.
struct CurveSeries {
    std::vector<double> keys, values;
};

// The keys every curve spans, `fallback` when none has a point.
QCPRange keyRangeOf(const std::vector<CurveSeries>& curves, const QCPRange& fallback);

// Every curve decimated in order, as decimatedCurve() does each; nothing
// when `cancelled` is set before the last one is done. It is checked
// between curves (a curve of 100,000 points takes about half a millisecond),
// so a job whose range the user has already left stops soon.
std::optional<std::vector<DecimatedCurve>> decimatedCurves(const std::vector<CurveSeries>& curves,
    double lower, double upper, int columns, const std::atomic<bool>* cancelled = nullptr);

} // namespace tb::ui
