#include "compare/curve_decimation.h"

#include <QtTest>

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

    void emptyAndDegenerateRanges()
    {
        QVERIFY(decimatedCurve({}, {}, 0, 1, 10).points.isEmpty());
        const Curve c = noisy(1000);
        QCOMPARE(decimatedCurve(c.keys, c.values, 5, 5, 10).points.size(), 3); // the point and its neighbours
    }
};

QTEST_MAIN(TestCurveDecimation)
#include "test_curve_decimation.moc"
