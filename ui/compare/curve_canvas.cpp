#include "compare/curve_canvas.h"

#include <algorithm>
#include <cmath>

namespace tb::ui {

namespace {

// Where an axis puts a coordinate, as QCPAxis::coordToPixel does:
// offset + slope * c, c the coordinate or, on a log scale, its logarithm.
struct PixelLine {
    double offset, slope;
};

// `start` and `length`: the panel's left and width, or its bottom and
// height going up (`upward`). Nothing where the range has no extent or a log
// range reaches zero.
std::optional<PixelLine> pixelLine(
    double start, double length, const QCPRange& range, QCPAxis::ScaleType scale, bool upward)
{
    double lower = range.lower, upper = range.upper;
    if (scale == QCPAxis::stLogarithmic) {
        if (!(lower > 0 && upper > 0))
            return std::nullopt;
        lower = std::log(lower);
        upper = std::log(upper);
    }
    if (!(upper != lower) || !std::isfinite(upper - lower))
        return std::nullopt;
    const double slope = (upward ? -length : length) / (upper - lower);
    return PixelLine{start - lower * slope, slope};
}

// The scale and offset along one axis that take a pixel of the old view to
// the pixel the new view draws the same coordinate at.
std::optional<std::pair<double, double>> pixelToPixel(
    std::optional<PixelLine> from, std::optional<PixelLine> to)
{
    if (!from || !to)
        return std::nullopt;
    double scale = to->slope / from->slope;
    // A pan keeps the scale but for rounding; exactly 1 lets Qt blit the
    // image instead of sampling it through a scaling transform.
    if (std::abs(scale - 1) < 1e-9)
        scale = 1;
    return std::pair{scale, to->offset - scale * from->offset};
}

} // namespace

void CanvasGraph::drawAsLayerWould(QCPPainter* painter)
{
    // QCPLayer::draw's steps for one child, the clip one pixel up as there.
    painter->save();
    painter->setClipRect(clipRect().translated(0, -1));
    applyDefaultAntialiasingHint(painter);
    draw(painter);
    painter->restore();
}

CurveCanvas::CurveCanvas(QCPAxisRect* panel, const QString& layer)
    : QCPLayerable(panel->parentPlot(), layer, panel)
    , m_panel(panel)
{
}

void CurveCanvas::setGraphs(const QVector<CanvasGraph*>& graphs)
{
    // The same graphs again (new points for the same runs) leave the image
    // standing in until markStale()'s turn.
    if (std::equal(graphs.begin(), graphs.end(), m_graphs.begin(), m_graphs.end()))
        return;
    m_graphs.clear();
    for (CanvasGraph* graph : graphs)
        m_graphs.append(graph);
    m_valid = false;
}

void CurveCanvas::applyDefaultAntialiasingHint(QCPPainter* painter) const
{
    // Only an image is drawn here; each graph sets its own when rendered.
    painter->setAntialiasing(false);
}

QRect CurveCanvas::clipRect() const
{
    return m_panel->rect();
}

CurveCanvas::View CurveCanvas::currentView(const QCPPainter* painter) const
{
    const QCPAxis* keyAxis = m_panel->axis(QCPAxis::atBottom);
    const QCPAxis* valueAxis = m_panel->axis(QCPAxis::atLeft);
    // The graphs' clip, as QCPLayer sets it: the panel one pixel up.
    return {m_panel->rect().translated(0, -1), keyAxis->range(), valueAxis->range(),
        keyAxis->scaleType(), valueAxis->scaleType(),
        painter->device() ? painter->device()->devicePixelRatioF() : 1.0};
}

void CurveCanvas::drawGraphs(QCPPainter* painter)
{
    for (CanvasGraph* graph : m_graphs)
        if (graph && graph->visible())
            graph->drawAsLayerWould(painter);
}

void CurveCanvas::render(const View& view, bool stale)
{
    m_image = QImage(view.rect.size() * view.pixelRatio, QImage::Format_ARGB32_Premultiplied);
    m_image.setDevicePixelRatio(view.pixelRatio);
    m_image.fill(Qt::transparent);
    QCPPainter painter(&m_image);
    painter.translate(-view.rect.topLeft());
    drawGraphs(&painter);
    m_view = view;
    m_valid = true;
    m_stale = stale;
    ++m_renders;
}

bool CurveCanvas::drawStretched(QCPPainter* painter, const View& view)
{
    if (m_image.isNull() || view.pixelRatio != m_view.pixelRatio)
        return false;
    // The panel's own rectangle, which QCustomPlot's axes map from; the
    // views hold the graphs' clip, one pixel up.
    const QRect from = m_view.rect.translated(0, 1), to = view.rect.translated(0, 1);
    const auto x =
        pixelToPixel(pixelLine(from.left(), from.width(), m_view.keys, m_view.keyScale, false),
            pixelLine(to.left(), to.width(), view.keys, view.keyScale, false));
    const auto y = pixelToPixel(
        pixelLine(from.bottom(), from.height(), m_view.values, m_view.valueScale, true),
        pixelLine(to.bottom(), to.height(), view.values, view.valueScale, true));
    if (!x || !y)
        return false;
    painter->save();
    painter->setClipRect(view.rect, Qt::IntersectClip);
    painter->setTransform(QTransform(x->first, 0, 0, y->first, x->second, y->second), true);
    painter->drawImage(m_view.rect.topLeft(), m_image);
    painter->restore();
    ++m_stretches;
    return true;
}

void CurveCanvas::draw(QCPPainter* painter)
{
    // Vector export (PDF) and scaled exports (toPixmap with a scale) get the
    // curves themselves, not a bitmap of them at the screen's resolution.
    const bool exporting = painter->modes().testFlag(QCPPainter::pmVectorized)
        || painter->modes().testFlag(QCPPainter::pmNoCaching)
        || painter->transform().type() > QTransform::TxTranslate;
    const bool current = !m_prepare || m_prepare(exporting);
    if (exporting) {
        drawGraphs(painter);
        return;
    }
    const View view = currentView(painter);
    if (view.rect.isEmpty())
        return;
    const bool upToDate = m_valid && view == m_view && (!m_stale || !current);
    // Until the curves of this view arrive, the last image stands in for
    // them, as a map viewer shows its old tiles while loading new ones; and
    // once they have, a panel waits its turn to draw them
    // (setRenderGate()).
    if (!upToDate) {
        const bool wait = !current || (m_valid && m_renderGate && !m_renderGate());
        if (wait && m_valid && drawStretched(painter, view))
            return;
        render(view, !current);
    }
    painter->drawImage(view.rect.topLeft(), m_image);
}

} // namespace tb::ui
