#pragma once

#include "compare/compare_follower.h"
#include "compare/curve_canvas.h"
#include "metrics/run_compare.h"

#include <qcustomplot.h>

namespace tb::ui {

// Several runs overlaid, one colour each, in four panels on one x-axis:
// training loss (validation losses as points), learning rate, tokens/s and
// peak memory. The x-axis is the step, the tokens seen or the wall time;
// loss and tokens/s can be smoothed (TensorBoard's de-biased moving
// average) and the loss drawn on a log scale.
class OverlayCharts : public QCustomPlot {
    Q_OBJECT

public:
    enum Panel { LossPanel, LearningRatePanel, ThroughputPanel, MemoryPanel, PanelCount };

    explicit OverlayCharts(QWidget* parent = nullptr);

    void setRuns(const QVector<ComparedRun>& runs);
    void setXAxis(metrics::XAxis axis);
    void setSmoothing(double weight);
    void setLogLoss(bool logarithmic);

    metrics::XAxis xAxis() const { return m_xAxis; }
    // The curve of the run-th compared run in a panel (tests, benchmarks).
    QCPGraph* curve(int run, Panel panel) const;
    QCPGraph* evalPoints(int run) const;
    int runCount() const { return int(m_runs.size()); }
    // How many times the curves were decimated, and a panel's curves drawn
    // (tests and benchmarks: a replot at the same zoom does neither).
    int decimationCount() const { return m_decimations; }
    int curveRenderCount(Panel panel) const { return m_canvases[panel]->renderCount(); }

private:
    // A panel's whole curve for one run; the graph holds what of it the
    // current x range and width show (curve_decimation.h).
    struct Series {
        std::vector<double> keys, values;
    };

    void redraw();
    void ensureGraphs(int runs);
    void fitRanges();
    // Gives each graph the points of its series worth drawing at the x range
    // and panel width now, unless they are those it was given last: once per
    // zoom, pan or resize, never per paint. The canvases call it as they
    // draw, once the plot is laid out.
    void decimate();
    QCPRange wholeKeyRange() const; // every series' keys, the axis's range when there are none

    void invalidateCanvases();

    QCPAxisRect* m_panels[PanelCount] = {};
    CurveCanvas* m_canvases[PanelCount] = {};
    QVector<std::array<CanvasGraph*, PanelCount + 1>> m_graphs; // the last: validation points
    QVector<std::array<Series, PanelCount>> m_series;
    QCPRange m_decimatedRange;
    int m_decimatedColumns = -1; // -1: the series changed since
    int m_decimations = 0;
    QVector<ComparedRun> m_runs;
    metrics::XAxis m_xAxis = metrics::XAxis::Step;
    double m_smoothing = 0;
    bool m_logLoss = false;
};

} // namespace tb::ui
