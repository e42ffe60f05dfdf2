#include "compare/curve_decimation.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

// The Compare page draws each curve as the points worth drawing at its zoom
// (compare/curve_decimation.h): every point when they are few, else per
// pixel column the lowest and highest, which cover the same pixels.
using namespace tb::ui;

namespace {

struct Curve {
    std::vector<double> keys, values;
};

Curve noisy(int n)
{
    Curve c;
    for (int i = 0; i < n; ++i) {
        c.keys.push_back(i);
        c.values.push_back(std::sin(i * 12.9898) + 0.001 * i);
    }
    return c;
}

// Keys that are not evenly spaced: runs of steps close together, gaps (a
// run paused, then resumed), and steps logged twice at one key.
Curve uneven(int n)
{
    Curve c;
    double key = 0;
    for (int i = 0; i < n; ++i) {
        key += i % 997 == 0 ? 500.0 : (i % 13 == 0 ? 0.0 : 0.25 + 0.2 * std::sin(i * 0.7));
        c.keys.push_back(key);
        c.values.push_back(std::cos(i * 4.1) + 0.0001 * i);
    }
    return c;
}

// The decimation done point by point, each point's column computed as the
// one under test computes it: what its search must give exactly.
QVector<QCPGraphData> pointByPoint(const Curve& c, double lower, double upper, int width)
{
    const double perColumn = (upper - lower) / width;
    auto columnOf = [&](double key) {
        return long(std::clamp(std::floor((key - lower) / perColumn), -1.0, double(width)));
    };
    std::size_t begin =
        std::size_t(std::lower_bound(c.keys.begin(), c.keys.end(), lower) - c.keys.begin());
    std::size_t end =
        std::size_t(std::upper_bound(c.keys.begin(), c.keys.end(), upper) - c.keys.begin());
    begin = begin > 0 ? begin - 1 : 0;
    end = std::min(c.keys.size(), end + 1);
    QVector<QCPGraphData> out;
    for (std::size_t i = begin; i < end;) {
        std::size_t low = i, high = i, j = i;
        for (; j < end && columnOf(c.keys[j]) == columnOf(c.keys[i]); ++j) {
            low = c.values[j] < c.values[low] ? j : low;
            high = c.values[j] > c.values[high] ? j : high;
        }
        out.append(QCPGraphData(c.keys[std::min(low, high)], c.values[std::min(low, high)]));
        if (low != high)
            out.append(QCPGraphData(c.keys[std::max(low, high)], c.values[std::max(low, high)]));
        i = j;
    }
    return out;
}

} // namespace

class TestCurveDecimation : public QObject {
    Q_OBJECT

private slots:
    void fewPointsAreKeptExactly()
    {
        const Curve c = noisy(50);
        const DecimatedCurve d = decimatedCurve(c.keys, c.values, 0, 49, 100);
        QVERIFY(!d.reduced);
        QCOMPARE(d.points.size(), 50);
        for (int i = 0; i < 50; ++i)
            QCOMPARE(d.points[i].value, c.values[size_t(i)]);
    }

    // Each column's extremes survive, and no more than two points a column
    // (plus the neighbours outside the range) are drawn.
    void eachColumnKeepsItsExtremes_data()
    {
        QTest::addColumn<double>("lower");
        QTest::addColumn<double>("upper");
        QTest::addRow("whole curve") << 0.0 << 99999.0;
        QTest::addRow("zoomed in") << 40000.0 << 60000.0;
    }
    void eachColumnKeepsItsExtremes()
    {
        QFETCH(double, lower);
        QFETCH(double, upper);
        constexpr int kColumns = 500;
        const Curve c = noisy(100000);
        const DecimatedCurve d = decimatedCurve(c.keys, c.values, lower, upper, kColumns);
        QVERIFY(d.reduced);
        QVERIFY2(d.points.size() <= 2 * kColumns + 4, qPrintable(QString::number(d.points.size())));
        const double width = (upper - lower) / kColumns;
        std::vector<double> low(kColumns, 1e300), high(kColumns, -1e300);
        for (const QCPGraphData& p : d.points) {
            if (p.key < lower || p.key > upper)
                continue;
            const int col = std::min(kColumns - 1, int((p.key - lower) / width));
            low[size_t(col)] = std::min(low[size_t(col)], p.value);
            high[size_t(col)] = std::max(high[size_t(col)], p.value);
        }
        for (size_t i = 0; i < c.keys.size(); ++i) {
            if (c.keys[i] < lower || c.keys[i] > upper)
                continue;
            const int col = std::min(kColumns - 1, int((c.keys[i] - lower) / width));
            QVERIFY(c.values[i] >= low[size_t(col)] && c.values[i] <= high[size_t(col)]);
        }
        // The line enters and leaves the plot.
        QVERIFY(d.points.front().key <= lower || lower == 0);
        QVERIFY(d.points.back().key >= upper || upper == 99999.0);
        for (qsizetype i = 1; i < d.points.size(); ++i)
            QVERIFY(d.points[i - 1].key <= d.points[i].key);
    }

    // The column search finds the same columns, and so the same points, as
    // looking at every point.
    void sameAsPointByPoint_data()
    {
        QTest::addColumn<bool>("evenKeys");
        QTest::addColumn<double>("lowerShare");
        QTest::addColumn<double>("upperShare");
        QTest::addColumn<int>("columns");
        QTest::addRow("even, whole") << true << 0.0 << 1.0 << 1300;
        QTest::addRow("even, zoomed, odd width") << true << 0.3137 << 0.4421 << 977;
        QTest::addRow("even, one column") << true << 0.0 << 1.0 << 1;
        QTest::addRow("even, range past the data") << true << -0.5 << 1.7 << 640;
        QTest::addRow("uneven, whole") << false << 0.0 << 1.0 << 1300;
        QTest::addRow("uneven, zoomed") << false << 0.61 << 0.6702 << 400;
        QTest::addRow("uneven, few columns") << false << 0.1 << 0.9 << 7;
    }
    void sameAsPointByPoint()
    {
        QFETCH(bool, evenKeys);
        QFETCH(double, lowerShare);
        QFETCH(double, upperShare);
        QFETCH(int, columns);
        const Curve c = evenKeys ? noisy(100000) : uneven(100000);
        const double span = c.keys.back() - c.keys.front();
        const double lower = c.keys.front() + lowerShare * span,
                     upper = c.keys.front() + upperShare * span;
        const QVector<QCPGraphData> expected = pointByPoint(c, lower, upper, columns);
        const DecimatedCurve d = decimatedCurve(c.keys, c.values, lower, upper, columns);
        QVERIFY(d.reduced);
        QCOMPARE(d.points.size(), expected.size());
        for (qsizetype i = 0; i < expected.size(); ++i) {
            QCOMPARE(d.points[i].key, expected[i].key);
            QCOMPARE(d.points[i].value, expected[i].value);
        }
    }

    void emptyAndDegenerateRanges()
    {
        QVERIFY(decimatedCurve({}, {}, 0, 1, 10).points.isEmpty());
        const Curve c = noisy(1000);
        QCOMPARE(decimatedCurve(c.keys, c.values, 5, 5, 10).points.size(),
            3); // the point and its neighbours
    }
};

QTEST_MAIN(TestCurveDecimation)
#include "test_curve_decimation.moc"
