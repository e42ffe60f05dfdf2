#pragma once

#include "compare/background_decimator.h"
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

    // With background decimation on, the curves are made and decimated on
    // the thread pool and drawn when they come (the previous ones shown
    // until then), so that a followed run growing each second does not
    // hold the UI thread; off, here. Runs given while a build runs wait for
    // it, the newest only, so every build is shown however often they
    // come. The x-axis, smoothing and log scale redo the curves here
    // either way. The x range follows the runs' growth
    // until the user pans or zooms; then the view they chose is kept while
    // the same runs grow, and fitted again for other runs, another x-axis
    // or fitView().
    void setRuns(const QVector<ComparedRun>& runs);
    // Fits the x range to the runs again and follows their growth from
    // then on (a double-click on the plot).
    void fitView();
    void setXAxis(metrics::XAxis axis);
    void setSmoothing(double weight);
    void setLogLoss(bool logarithmic);
    // On (the default): new runs (setRuns()), a pan, zoom or resize
    // decimate on the thread pool and the panels show their previous image,
    // moved and scaled to the new range, meanwhile. Off: setRuns() and the
    // replot decimate before drawing, as the benchmark's reference and for
    // tests to compare with.
    void setBackgroundDecimation(bool on);
    // Whether the curves drawn are not yet those of the runs, x range and
    // width asked for (a decimation is on its way).
    bool isDecimating() const { return m_decimator.isBusy(); }

    metrics::XAxis xAxis() const { return m_xAxis; }
    // The curve of the run-th compared run in a panel (tests, benchmarks).
    QCPGraph* curve(int run, Panel panel) const;
    QCPGraph* evalPoints(int run) const;
    int runCount() const { return int(m_graphs.size()); } // the runs drawn
    // How many times the curves were decimated, and a panel's curves drawn
    // (tests and benchmarks: a replot at the same zoom does neither).
    int decimationCount() const { return m_decimations; }
    int curveRenderCount(Panel panel) const { return m_canvases[panel]->renderCount(); }
    const CurveCanvas* canvas(Panel panel) const { return m_canvases[panel]; }
    const BackgroundDecimator& decimator() const { return m_decimator; }
    // Called on the pool as each build of new runs starts (tests: a build
    // made to outlast the setRuns calls that come while it runs).
    void setBuildHook(std::function<void()> hook) { m_decimator.setBuildHook(std::move(hook)); }
    // Every run's whole curves, run by run, a panel after another (tests:
    // a job must let them go once it ends).
    const std::shared_ptr<const std::vector<CurveSeries>>& curveSeries() const { return m_curves; }

signals:
    // The graphs now hold the points of the x range and width shown (or,
    // for new runs in a view the user holds, of their whole range until the
    // view's come);
    // the queued replot that follows draws them.
    void curvesDecimated();

private:
    // The graphs of m_runs (their pens, names, validation points), their
    // curves made, decimated and the ranges fitted, all here.
    void redraw();
    // The same, the curves made and decimated on the pool for
    // builtInBackground().
    void buildInBackground();
    void builtInBackground(const QVector<ComparedRun>& runs, const DecimationRequest& request,
        const std::vector<DecimatedCurve>& curves);
    void showRuns(const QVector<ComparedRun>& runs);
    void ensureGraphs(int runs);
    // The x range the user chose, to be kept over `runs`; nothing where the
    // view follows the runs (never moved since fitted, or other runs).
    std::optional<QCPRange> heldView(const QVector<ComparedRun>& runs) const;
    bool followsRuns() const;
    // Fits the value ranges to the graphs, which hold the whole curves, and
    // the x range to the runs unless `held`, which is put back.
    void fitRanges(const std::optional<QCPRange>& held);
    void fitKeyRange();
    void fitValueRanges();
    // Whether the graphs hold the points of their series worth drawing at the
    // x range and panel width now; if not, decimates them (here when `exact`
    // or background decimation is off, else on the pool, answering false):
    // once per zoom, pan or resize, never per paint. The canvases call it as
    // they draw, once the plot is laid out.
    bool prepareCurves(bool exact);
    DecimationRequest currentRequest() const;
    // Whether a canvas may draw its curves this replot (one a replot when
    // decimating in the background); a canvas refused draws its image moved
    // and another replot follows.
    bool takeRenderTurn();
    void applyDecimation(
        const DecimationRequest& request, const std::vector<DecimatedCurve>& curves);
    void decimatedInBackground(
        const DecimationRequest& request, const std::vector<DecimatedCurve>& curves);
    QCPRange wholeKeyRange() const; // every series' keys, the axis's range when there are none
    QCPAxis* keyAxis() const { return m_panels[LossPanel]->axis(QCPAxis::atBottom); }

    void invalidateCanvases();

    QCPAxisRect* m_panels[PanelCount] = {};
    CurveCanvas* m_canvases[PanelCount] = {};
    QVector<std::array<CanvasGraph*, PanelCount + 1>> m_graphs; // the last: validation points
    // Each run's panels' whole curves, run by run; replaced, never changed,
    // so a background job may go on reading the previous ones.
    std::shared_ptr<const std::vector<CurveSeries>> m_curves =
        std::make_shared<std::vector<CurveSeries>>();
    DecimationRequest m_decimated; // what the graphs hold
    int m_columnsAsked = 0; // the width the latest build was asked for
    // The x range last fitted to the runs: the view follows them while it
    // is shown; nothing, to fit at the next runs.
    std::optional<QCPRange> m_fittedKeys;
    QStringList m_shownDirs; // the runs the graphs show
    BackgroundDecimator m_decimator;
    bool m_background = true;
    int m_rendersThisReplot = 0;
    bool m_renderRefused = false;
    int m_decimations = 0;
    QVector<ComparedRun> m_runs;
    metrics::XAxis m_xAxis = metrics::XAxis::Step;
    double m_smoothing = 0;
    bool m_logLoss = false;
};

} // namespace tb::ui
