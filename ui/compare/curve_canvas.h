#pragma once

#include <qcustomplot.h>

#include <functional>

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
    void setPrepare(std::function<void()> prepare) { m_prepare = std::move(prepare); }
    // The graphs' points or pens changed.
    void invalidate() { m_valid = false; }
    // How many times the curves were drawn into the image (tests, benchmarks).
    int renderCount() const { return m_renders; }

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override;
    void draw(QCPPainter* painter) override;
    QRect clipRect() const override;

private:
    // What the image shows; a new one means drawing the curves again.
    struct View {
        QRect rect;
        QCPRange keys, values;
        QCPAxis::ScaleType valueScale = QCPAxis::stLinear;
        qreal pixelRatio = 1;
        bool operator==(const View&) const = default;
    };

    View currentView(const QCPPainter* painter) const;
    void drawGraphs(QCPPainter* painter);
    void render(const View& view);

    QCPAxisRect* m_panel;
    std::function<void()> m_prepare;
    QVector<QPointer<CanvasGraph>> m_graphs;
    QImage m_image;
    View m_view;
    bool m_valid = false;
    int m_renders = 0;
};

} // namespace tb::ui
