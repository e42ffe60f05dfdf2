#include "compare/curve_decimation.h"

#include <algorithm>
#include <cmath>

namespace tb::ui {

namespace {

// Below this many points a column, drawing them all costs as little as
// drawing its four.
constexpr std::size_t kPointsPerColumn = 2;

// One pixel column's points, reduced to its lowest and highest in their
// order: the vertical stroke that covers the column's pixels, joined to the
// next column's.
struct Column {
    std::size_t lowest = 0, highest = 0;
    bool empty = true;

    void add(std::size_t i, std::span<const double> values)
    {
        if (empty) {
            lowest = highest = i;
            empty = false;
        }
        if (values[i] < values[lowest])
            lowest = i;
        if (values[i] > values[highest])
            highest = i;
    }

    void appendTo(QVector<QCPGraphData>& out, std::span<const double> keys, std::span<const double> values) const
    {
        out.append(QCPGraphData(keys[std::min(lowest, highest)], values[std::min(lowest, highest)]));
        if (lowest != highest)
            out.append(QCPGraphData(keys[std::max(lowest, highest)], values[std::max(lowest, highest)]));
    }
};

} // namespace

DecimatedCurve decimatedCurve(std::span<const double> keys, std::span<const double> values,
    double lower, double upper, int columns)
{
    DecimatedCurve curve;
    QVector<QCPGraphData>& out = curve.points;
    const std::size_t n = std::min(keys.size(), values.size());
    if (n == 0)
        return curve;
    // The visible points and one on each side.
    std::size_t begin = std::size_t(std::lower_bound(keys.begin(), keys.begin() + n, lower) - keys.begin());
    std::size_t end = std::size_t(std::upper_bound(keys.begin(), keys.begin() + n, upper) - keys.begin());
    begin = begin > 0 ? begin - 1 : 0;
    end = std::min(n, end + 1);
    const int width = std::max(1, columns);
    if (end - begin <= kPointsPerColumn * std::size_t(width) || !(upper > lower)) {
        out.reserve(qsizetype(end - begin));
        for (std::size_t i = begin; i < end; ++i)
            out.append(QCPGraphData(keys[i], values[i]));
        return curve;
    }
    out.reserve(qsizetype(kPointsPerColumn) * (width + 2));
    const double perColumn = (upper - lower) / width;
    Column column;
    long current = 0;
    for (std::size_t i = begin; i < end; ++i) {
        // Points before and after the range get their own column each.
        const long at = long(std::clamp(std::floor((keys[i] - lower) / perColumn), -1.0, double(width)));
        if (!column.empty && at != current) {
            column.appendTo(out, keys, values);
            column = Column{};
        }
        current = at;
        column.add(i, values);
    }
    if (!column.empty)
        column.appendTo(out, keys, values);
    curve.reduced = std::size_t(out.size()) < end - begin;
    return curve;
}

} // namespace tb::ui
