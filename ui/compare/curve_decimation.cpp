#include "compare/curve_decimation.h"

#include <algorithm>
#include <cmath>

namespace tb::ui {

namespace {

// Below this many points a column, drawing them all costs as little as
// drawing its four.
constexpr std::size_t kPointsPerColumn = 2;

// The column a key falls in, -1 and `width` for those before and after the
// range; every decision about a point's column goes through here, so the
// search below and a scan point by point agree on each boundary.
struct Columns {
    double lower, perColumn;
    int width;

    long of(double key) const
    {
        return long(std::clamp(std::floor((key - lower) / perColumn), -1.0, double(width)));
    }
};

// The end of the run of points in the same column as keys[begin]: guessed
// from the previous column's count and walked from there, so a column costs
// a few key tests instead of one per point.
std::size_t columnEnd(std::span<const double> keys, std::size_t begin, std::size_t end,
    std::size_t guess, const Columns& columns)
{
    const long column = columns.of(keys[begin]);
    std::size_t inside = begin; // the last point known to be in the column
    std::size_t at = std::clamp(begin + guess, begin + 1, end);
    while (at < end && columns.of(keys[at]) == column) {
        inside = at;
        at = std::min(end, at + std::max<std::size_t>(1, guess / 4));
    }
    // keys[at] (or the end) is past the column: halve the gap to its first point.
    while (at - inside > 1) {
        const std::size_t middle = inside + (at - inside) / 2;
        (columns.of(keys[middle]) == column ? inside : at) = middle;
    }
    return at;
}

// The column's points [begin, end) reduced to its lowest and highest (the
// first of each where several tie), in their order: the vertical stroke
// that covers the column's pixels, joined to the next column's.
void appendExtremes(QVector<QCPGraphData>& out, std::span<const double> keys,
    std::span<const double> values, std::size_t begin, std::size_t end)
{
    std::size_t lowest = begin, highest = begin;
    double low = values[begin], high = values[begin];
    for (std::size_t i = begin + 1; i < end; ++i) {
        const double v = values[i];
        if (v < low) {
            low = v;
            lowest = i;
        }
        if (v > high) {
            high = v;
            highest = i;
        }
    }
    const std::size_t first = std::min(lowest, highest), second = std::max(lowest, highest);
    out.append(QCPGraphData(keys[first], values[first]));
    if (first != second)
        out.append(QCPGraphData(keys[second], values[second]));
}

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
    std::size_t begin =
        std::size_t(std::lower_bound(keys.begin(), keys.begin() + n, lower) - keys.begin());
    std::size_t end =
        std::size_t(std::upper_bound(keys.begin(), keys.begin() + n, upper) - keys.begin());
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
    const Columns grid{lower, (upper - lower) / width, width};
    std::size_t guess = (end - begin) / std::size_t(width);
    for (std::size_t first = begin; first < end;) {
        const std::size_t last = columnEnd(keys, first, end, guess, grid);
        appendExtremes(out, keys, values, first, last);
        guess = last - first;
        first = last;
    }
    curve.reduced = std::size_t(out.size()) < end - begin;
    return curve;
}

QCPRange keyRangeOf(const std::vector<CurveSeries>& curves, const QCPRange& fallback)
{
    std::optional<QCPRange> whole;
    for (const CurveSeries& s : curves) {
        if (s.keys.empty())
            continue;
        whole = whole ? QCPRange(
                    std::min(whole->lower, s.keys.front()), std::max(whole->upper, s.keys.back()))
                      : QCPRange(s.keys.front(), s.keys.back());
    }
    return whole.value_or(fallback);
}

std::optional<std::vector<DecimatedCurve>> decimatedCurves(const std::vector<CurveSeries>& curves,
    double lower, double upper, int columns, const std::atomic<bool>* cancelled)
{
    std::vector<DecimatedCurve> out;
    out.reserve(curves.size());
    for (const CurveSeries& curve : curves) {
        if (cancelled && cancelled->load(std::memory_order_relaxed))
            return std::nullopt;
        out.push_back(decimatedCurve(curve.keys, curve.values, lower, upper, columns));
    }
    return out;
}

} // namespace tb::ui
