#include "../support/qt_test_paths.h"
#include "compare/overlay_charts.h"
#include "compare/run_colors.h"
#include "metrics/event.h"
#include "overlay_runs.h"

#include <QDir>
#include <QtTest>

#include <cmath>

// The Compare page's overlay decimates its curves once per x range and
// panel width and keeps each panel's curves as an image
// (compare/curve_canvas.h): a replot that changes neither redraws no curve,
// one that does redraws only what it changed, and the image shows the same
// pixels as drawing every graph. The x range follows the runs' growth until
// the user moves it, and the view they chose stays while the runs grow.
using tb::ui::ComparedRun;
using tb::ui::OverlayCharts;

namespace {

// A run as a person would compare it: a loss decaying with noise, a
// cosine learning rate, each run a little above the one before.
std::shared_ptr<const tb::metrics::RunHistory> decayingRun(int index, int steps)
{
    using nlohmann::json;
    auto history = std::make_shared<tb::metrics::RunHistory>();
    history->apply(*tb::metrics::parseEvent(tb::metrics::makeEvent(tb::metrics::EventType::RunStart,
        0, 1.0e9,
        {{"run_id", "run-" + std::to_string(index)}, {"world_size", 1},
            {"config", json::object()}}).dump()));
    tb::metrics::Event step{tb::metrics::EventType::Step, "step", 0, 1.0e9,
        {{"step", 0}, {"loss", 0.0}, {"lr", 0.0}, {"tokens", 256}, {"step_seconds", 0.5},
            {"tokens_per_second", 0.0}, {"mem_peak_bytes", int64_t(0)}}};
    for (int s = 1; s <= steps; ++s) {
        const double progress = double(s) / steps,
                     noise = std::sin(s * 12.9898 + index * 78.233) * 0.05;
        step.timeSeconds = 1.0e9 + s * 0.5;
        step.body["step"] = s;
        step.body["loss"] = 2.0 + 2.0 * std::exp(-5 * progress) + 0.04 * index + noise;
        step.body["lr"] = 1e-3 * 0.5 * (1 + std::cos(M_PI * progress)) * (1 + 0.02 * index);
        step.body["tokens_per_second"] = (8192 + 60 * index) * (1 + noise);
        step.body["mem_peak_bytes"] = int64_t((3e8 + 4e6 * index) * (1 + 0.1 * noise));
        history->apply(step);
    }
    return history;
}

QVector<ComparedRun> runs(int count, int steps, bool decaying = false)
{
    QVector<ComparedRun> out;
    for (int i = 0; i < count; ++i)
        out.append({QStringLiteral("run-%1").arg(i),
            decaying ? decayingRun(i, steps) : tb::test::zigzagRun(i, steps), {}, {}});
    return out;
}

// How many pixels of a panel, outside the legend, have the colour (give or
// take a little), or with an invalid one, any colour (not the white, black
// and greys of the background, axes and grid).
int pixelsOf(const QImage& image, const QRect& panel, QColor color, const QRect& legend)
{
    int count = 0;
    for (int row = panel.top(); row <= panel.bottom(); ++row)
        for (int column = panel.left(); column <= panel.right(); ++column) {
            if (legend.contains(column, row))
                continue;
            const QColor c = image.pixelColor(column, row);
            if (!color.isValid())
                count += std::max({c.red(), c.green(), c.blue()})
                        - std::min({c.red(), c.green(), c.blue()})
                    > 40;
            else
                count += std::abs(c.red() - color.red()) + std::abs(c.green() - color.green())
                        + std::abs(c.blue() - color.blue())
                    <= 24;
        }
    return count;
}

struct Counts {
    int decimations = 0;
    int renders[OverlayCharts::PanelCount] = {};
};

Counts countsOf(const OverlayCharts& charts)
{
    Counts c;
    c.decimations = charts.decimationCount();
    for (int p = 0; p < OverlayCharts::PanelCount; ++p)
        c.renders[p] = charts.curveRenderCount(OverlayCharts::Panel(p));
    return c;
}

QImage drawnDirectly(OverlayCharts& charts)
{
    QImage image(charts.size(), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QCPPainter painter(&image);
    painter.setMode(QCPPainter::pmNoCaching); // the canvas draws the graphs themselves
    charts.toPainter(&painter, charts.width(), charts.height());
    return image;
}

// The largest difference of any channel of any pixel inside the panels
// (tick labels come from QCustomPlot's label cache on screen, and are drawn
// as text when it is off).
int largestDifference(const QImage& a, const QImage& b, const OverlayCharts& charts)
{
    const QImage x = a.convertToFormat(QImage::Format_ARGB32),
                 y = b.convertToFormat(QImage::Format_ARGB32);
    int largest = 0;
    for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
        const QRect panel = charts.curve(0, OverlayCharts::Panel(p))->keyAxis()->axisRect()->rect();
        for (int row = panel.top(); row <= panel.bottom(); ++row)
            for (int column = panel.left(); column <= panel.right(); ++column) {
                const QRgb p1 = x.pixel(column, row), p2 = y.pixel(column, row);
                for (int shift : {0, 8, 16, 24})
                    largest = std::max(
                        largest, std::abs(int((p1 >> shift) & 0xff) - int((p2 >> shift) & 0xff)));
            }
    }
    return largest;
}

// A point inside the loss panel, out of its legend.
QPoint inLossPanel(const OverlayCharts& charts, double across)
{
    const QRect panel = charts.curve(0, OverlayCharts::LossPanel)->keyAxis()->axisRect()->rect();
    return {panel.left() + int(panel.width() * across), panel.bottom() - panel.height() / 4};
}

// The user's moves, made with the mouse as on screen.
void userMove(OverlayCharts& charts, const QString& how)
{
    const QPoint at = inLossPanel(charts, 0.5);
    if (how == QLatin1String("wheel")) {
        QWheelEvent wheel(at, charts.mapToGlobal(at), {}, QPoint(0, 120), Qt::NoButton,
            Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(&charts, &wheel);
    } else if (how == QLatin1String("drag")) {
        const QPoint to = inLossPanel(charts, 0.3);
        QTest::mousePress(&charts, Qt::LeftButton, {}, at);
        QMouseEvent move(QEvent::MouseMove, to, charts.mapToGlobal(to), Qt::NoButton,
            Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&charts, &move);
        QTest::mouseRelease(&charts, Qt::LeftButton, {}, to);
    } else if (how == QLatin1String("double-click")) {
        QTest::mouseDClick(&charts, Qt::LeftButton, {}, at);
    }
}

// Until the overlay holds the curves of its runs and view: a replot lays
// the panels out, which may ask for the curves of another width.
void settled(OverlayCharts& charts)
{
    for (int replots = 0; replots < 10; ++replots) {
        QTRY_VERIFY(!charts.isDecimating());
        charts.replot(QCustomPlot::rpImmediateRefresh);
        if (!charts.isDecimating())
            return;
    }
    QFAIL("the curves never settled");
}

} // namespace

class TestOverlayCache : public QObject {
    Q_OBJECT

private slots:
    void replotRedoesOnlyWhatChanged_data()
    {
        QTest::addColumn<QString>("change");
        QTest::addColumn<bool>("decimated");
        QTest::addColumn<bool>("lossDrawn");
        QTest::addColumn<bool>("othersDrawn");
        QTest::addRow("nothing") << "nothing" << false << false << false;
        QTest::addRow("zoom in") << "zoom" << true << true << true;
        QTest::addRow("pan") << "pan" << true << true << true;
        QTest::addRow("wider window") << "resize" << true << true << true;
        QTest::addRow("loss's value range") << "lossValues" << false << true << false;
        QTest::addRow("legend hidden") << "legend" << false << false << false;
    }
    void replotRedoesOnlyWhatChanged()
    {
        QFETCH(QString, change);
        QFETCH(bool, decimated);
        QFETCH(bool, lossDrawn);
        QFETCH(bool, othersDrawn);
        OverlayCharts charts;
        // What one replot redoes, so the decimation on the UI thread
        // (test_overlay_background has the pool's).
        charts.setBackgroundDecimation(false);
        charts.resize(900, 700);
        charts.show();
        QVERIFY(QTest::qWaitForWindowExposed(&charts));
        charts.setRuns(runs(3, 20000));
        charts.replot(QCustomPlot::rpImmediateRefresh);
        const Counts before = countsOf(charts);
        QVERIFY(before.decimations >= 1);
        QCPAxis* keys = charts.curve(0, OverlayCharts::LossPanel)->keyAxis();
        const QVector<QCPGraphData> shown(
            charts.curve(0, OverlayCharts::LossPanel)->data()->constBegin(),
            charts.curve(0, OverlayCharts::LossPanel)->data()->constEnd());
        if (change == QLatin1String("zoom"))
            keys->scaleRange(0.5);
        else if (change == QLatin1String("pan"))
            keys->moveRange(keys->range().size() / 10);
        else if (change == QLatin1String("resize"))
            charts.resize(1100, 700);
        else if (change == QLatin1String("lossValues"))
            charts.curve(0, OverlayCharts::LossPanel)->valueAxis()->scaleRange(1.5);
        else if (change == QLatin1String("legend"))
            charts.findChild<QCPLegend*>(QStringLiteral("runsLegend"))->setVisible(false);
        QCoreApplication::processEvents(); // a resize replots through the event loop
        charts.replot(QCustomPlot::rpImmediateRefresh);
        const Counts after = countsOf(charts);
        QCOMPARE(after.decimations > before.decimations, decimated);
        QCOMPARE(after.renders[OverlayCharts::LossPanel] > before.renders[OverlayCharts::LossPanel],
            lossDrawn);
        for (int p = OverlayCharts::LearningRatePanel; p < OverlayCharts::PanelCount; ++p)
            QCOMPARE(after.renders[p] > before.renders[p], othersDrawn);
        const QCPGraphDataContainer& now = *charts.curve(0, OverlayCharts::LossPanel)->data();
        const bool changed = !std::equal(shown.begin(), shown.end(), now.constBegin(),
            now.constEnd(), [](const QCPGraphData& a, const QCPGraphData& b) {
                return a.key == b.key && a.value == b.value;
            });
        QCOMPARE(changed, decimated);
    }

    // The image a panel keeps shows what drawing its graphs shows: curves
    // reduced per column (drawn without antialiasing) and curves of a few
    // points (antialiased, composed over the grid from a transparent image).
    void cachedCurvesLookLikeDrawnOnes_data()
    {
        QTest::addColumn<int>("steps");
        QTest::addColumn<int>("tolerance");
        QTest::addRow("reduced per column") << 50000 << 0;
        // Antialiased edges composed from a transparent image round once
        // more per curve on the pixel than when drawn on the plot: a few
        // levels of 255, no visible change.
        QTest::addRow("a few points, antialiased") << 40 << 4;
    }
    void cachedCurvesLookLikeDrawnOnes()
    {
        QFETCH(int, steps);
        QFETCH(int, tolerance);
        OverlayCharts charts;
        charts.resize(900, 700);
        charts.show();
        QVERIFY(QTest::qWaitForWindowExposed(&charts));
        charts.setRuns(runs(4, steps));
        charts.replot(QCustomPlot::rpImmediateRefresh);
        // The first layout narrows the panels, whose curves then come from
        // the thread pool, a panel drawn a replot.
        QTRY_VERIFY(!charts.isDecimating());
        for (int p = 0; p < OverlayCharts::PanelCount; ++p)
            charts.replot(QCustomPlot::rpImmediateRefresh);
        QCOMPARE(charts.curve(0, OverlayCharts::LossPanel)->antialiased(), steps < 900);
        const QImage cached = charts.grab().toImage();
        const QImage direct = drawnDirectly(charts);
        QCOMPARE(cached.size(), direct.size());
        const int difference = largestDifference(cached, direct, charts);
        QVERIFY2(difference <= tolerance, qPrintable(QString::number(difference)));
        // And the curves are there: the cached image is not the empty plot.
        OverlayCharts empty;
        empty.resize(900, 700);
        empty.show();
        QVERIFY(QTest::qWaitForWindowExposed(&empty));
        empty.setBackgroundDecimation(false); // its graphs made at once
        empty.setRuns(runs(4, steps));
        for (int run = 0; run < 4; ++run)
            for (int p = 0; p < OverlayCharts::PanelCount; ++p)
                empty.curve(run, OverlayCharts::Panel(p))->setVisible(false);
        empty.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(largestDifference(cached, empty.grab().toImage(), charts) > 100);
    }

    // A followed run grows each second: the x range follows it until the
    // user pans or zooms, then stays where they put it while the same runs
    // grow; other runs, another x-axis or a double-click fit it again.
    void viewKeptAcrossGrowth_data()
    {
        QTest::addColumn<QString>("steps");
        QTest::addColumn<bool>("kept");
        QTest::addRow("not moved: follows growth") << "" << false;
        QTest::addRow("zoomed (wheel): kept") << "wheel" << true;
        QTest::addRow("panned (drag): kept") << "drag" << true;
        QTest::addRow("zoomed, smoothing changed: kept") << "wheel smoothing" << true;
        QTest::addRow("zoomed, runs replaced: fitted") << "wheel replaced" << false;
        QTest::addRow("zoomed, x-axis changed: fitted") << "wheel tokens" << false;
        QTest::addRow("zoomed, double-click: follows growth") << "wheel double-click" << false;
        QTest::addRow("double-click, then zoomed: kept") << "double-click wheel" << true;
    }
    void viewKeptAcrossGrowth()
    {
        QFETCH(QString, steps);
        QFETCH(bool, kept);
        for (const bool background : {false, true}) {
            OverlayCharts charts, reference;
            for (OverlayCharts* overlay : {&charts, &reference}) {
                overlay->setBackgroundDecimation(background);
                overlay->resize(900, 700);
                overlay->show();
                QVERIFY(QTest::qWaitForWindowExposed(overlay));
            }
            int length = 2000;
            QVector<ComparedRun> data = runs(3, length);
            charts.setRuns(data);
            settled(charts);
            QCPAxis* keys = charts.curve(0, OverlayCharts::LossPanel)->keyAxis();
            const QCPRange fitted = keys->range();
            for (const QString& step : steps.split(u' ', Qt::SkipEmptyParts)) {
                if (step == QLatin1String("smoothing")) {
                    charts.setSmoothing(0.5);
                    reference.setSmoothing(0.5);
                } else if (step == QLatin1String("tokens")) {
                    charts.setXAxis(tb::metrics::XAxis::Tokens);
                    reference.setXAxis(tb::metrics::XAxis::Tokens);
                } else if (step == QLatin1String("replaced")) {
                    data = runs(2, length);
                    charts.setRuns(data);
                } else {
                    const QCPRange was = keys->range();
                    userMove(charts, step);
                    if (step == QLatin1String("double-click"))
                        QCOMPARE(keys->range(), fitted);
                    else
                        QVERIFY(keys->range() != was);
                }
                settled(charts);
            }
            const QCPRange chosen = keys->range();
            for (int second = 0; second < 2; ++second) {
                length += 500; // a second of a followed run
                data = runs(int(data.size()), length);
                charts.setRuns(data);
                settled(charts);
            }
            reference.setRuns(data);
            settled(reference);
            if (kept) {
                reference.curve(0, OverlayCharts::LossPanel)->keyAxis()->setRange(chosen);
                settled(reference);
            }
            QCOMPARE(keys->range() == chosen, kept);
            QCOMPARE(
                keys->range(), reference.curve(0, OverlayCharts::LossPanel)->keyAxis()->range());
            QCOMPARE(charts.curve(0, OverlayCharts::LossPanel)->data()->size(),
                reference.curve(0, OverlayCharts::LossPanel)->data()->size());
        }
    }

    // Many long runs, whole and zoomed, written to <build>/screenshots for a
    // person to look at; the last run drawn shows in every panel.
    void manyRunsScreenshot()
    {
        constexpr int kRuns = 30;
        OverlayCharts charts;
        charts.resize(1400, 1000);
        charts.show();
        QVERIFY(QTest::qWaitForWindowExposed(&charts));
        charts.setRuns(runs(kRuns, 20000, true));
        charts.replot(QCustomPlot::rpImmediateRefresh);
        QTRY_VERIFY(!charts.isDecimating());
        for (int p = 0; p < OverlayCharts::PanelCount; ++p)
            charts.replot(QCustomPlot::rpImmediateRefresh);
        QDir().mkpath(tb::test::qBuildPath("screenshots"));
        for (const bool zoomed : {false, true}) {
            if (zoomed) {
                charts.curve(0, OverlayCharts::LossPanel)->keyAxis()->setRange(1000, 3000);
                charts.replot(QCustomPlot::rpImmediateRefresh);
                // The zoomed curves come from the thread pool, a panel drawn
                // a replot.
                QTRY_VERIFY(!charts.isDecimating());
                for (int p = 0; p < OverlayCharts::PanelCount; ++p)
                    charts.replot(QCustomPlot::rpImmediateRefresh);
            }
            const QImage image = charts.grab().toImage().convertToFormat(QImage::Format_RGB32);
            const QString path = tb::test::qBuildPath("screenshots/compare_overlay_%1_runs%2.png")
                                     .arg(kRuns)
                                     .arg(zoomed ? QStringLiteral("_zoomed") : QString());
            QVERIFY2(image.save(path), qPrintable(path));
            const QRect legend =
                charts.findChild<QCPLegend*>(QStringLiteral("runsLegend"))->outerRect();
            for (int p = 0; p < OverlayCharts::PanelCount; ++p) {
                const QRect panel =
                    charts.curve(0, OverlayCharts::Panel(p))->keyAxis()->axisRect()->rect();
                const int coloured = pixelsOf(image, panel, {}, legend);
                QVERIFY2(coloured > 5000,
                    qPrintable(QStringLiteral("%1: panel %2, %3").arg(path).arg(p).arg(coloured)));
                // Zoomed in, the curves are antialiased and seldom cover a
                // pixel whole, so only the whole range shows the last run's
                // colour itself.
                if (!zoomed) {
                    const int last = pixelsOf(image, panel, tb::ui::runColor(kRuns - 1), legend);
                    QVERIFY2(last > 100,
                        qPrintable(QStringLiteral("%1: panel %2, %3").arg(path).arg(p).arg(last)));
                }
            }
        }
    }
};

QTEST_MAIN(TestOverlayCache)
#include "test_overlay_cache.moc"
