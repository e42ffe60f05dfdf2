#pragma once

#include <qcustomplot.h>

#include <functional>
#include <optional>

namespace tb::ui {

// A graph the canvas below draws for it: its layer is hidden, so
// QCustomPlot's own pass skips it, and the canvas draws it the way a
// layer would (its clip, its antialiasing).
class CanvasGraph : public QCPGraph {
    Q_OBJECT

public:
    using QCPGraph::QCPGraph;
    void drawAsLayerWould(QCPPainter* painter);
};

// One panel's curves drawn into an image once and that image drawn on every
// replot until what they show changes: their points or pens (invalidate()),
// the panel's place and size, its x or y range or scale. QCustomPlot 2.1
// redraws every layer on each replot, lmBuffered ones too, so a replot that
// changes only an axis label, the legend or another panel would otherwise
// redraw half a million segments.
class CurveCanvas : public QCPLayerable {
    Q_OBJECT

public:
    CurveCanvas(QCPAxisRect* panel, const QString& layer);

    void setGraphs(const QVector<CanvasGraph*>& graphs);
    // Called at the start of each draw, after QCustomPlot laid the plot out
    // (beforeReplot comes before it, with the panel's previous width): the
    // overlay decimates its curves here for the width they are drawn at.
    // It answers whether the graphs hold the points of the view drawn;
    // while they do not (a decimation on its way), the canvas shows the
    // image it has, moved and scaled to the new ranges. `exact`: the
    // graphs are about to be drawn themselves (an export), so they must.
    void setPrepare(std::function<bool(bool exact)> prepare) { m_prepare = std::move(prepare); }
    // Asked before drawing new curves where the image could stand in for
    // them: false leaves it standing this replot, so that a replot draws the
    // curves of one panel at a time and none holds the UI thread long.
    void setRenderGate(std::function<bool()> gate) { m_renderGate = std::move(gate); }
    // The graphs' points or pens changed.
    void invalidate() { m_valid = false; }
    // The graphs' points changed, their pens not: the image may stand in,
    // moved, until this panel's turn to draw them (setRenderGate()).
    void markStale() { m_stale = true; }
    // How many times the curves were drawn into the image, and the image
    // drawn moved or scaled for want of curves for the view (tests,
    // benchmarks).
    int renderCount() const { return m_renders; }
    int stretchCount() const { return m_stretches; }

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override;
    void draw(QCPPainter* painter) override;
    QRect clipRect() const override;

private:
    // What the image shows; a new one means drawing the curves again.
    struct View {
        QRect rect;
        QCPRange keys, values;
        QCPAxis::ScaleType keyScale = QCPAxis::stLinear, valueScale = QCPAxis::stLinear;
        qreal pixelRatio = 1;
        bool operator==(const View&) const = default;
    };

    View currentView(const QCPPainter* painter) const;
    void drawGraphs(QCPPainter* painter);
    // `stale`: drawn from graphs that hold another view's points, for want
    // of an image to stand in.
    void render(const View& view, bool stale);
    // The image, made for m_view, drawn where `view` puts its points; false
    // where no scale and offset does that (another scale type, a log range
    // reaching zero, another pixel ratio).
    bool drawStretched(QCPPainter* painter, const View& view);

    QCPAxisRect* m_panel;
    std::function<bool(bool)> m_prepare;
    std::function<bool()> m_renderGate;
    QVector<QPointer<CanvasGraph>> m_graphs;
    QImage m_image;
    View m_view;
    bool m_valid = false;
    bool m_stale = false;
    int m_renders = 0;
    int m_stretches = 0;
};

} // namespace tb::ui
