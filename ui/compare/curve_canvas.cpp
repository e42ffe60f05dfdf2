#include "compare/curve_canvas.h"

namespace tb::ui {

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
    return {m_panel->rect().translated(0, -1), keyAxis->range(), valueAxis->range(), valueAxis->scaleType(),
        painter->device() ? painter->device()->devicePixelRatioF() : 1.0};
}

void CurveCanvas::drawGraphs(QCPPainter* painter)
{
    for (CanvasGraph* graph : m_graphs)
        if (graph && graph->visible())
            graph->drawAsLayerWould(painter);
}

void CurveCanvas::render(const View& view)
{
    m_image = QImage(view.rect.size() * view.pixelRatio, QImage::Format_ARGB32_Premultiplied);
    m_image.setDevicePixelRatio(view.pixelRatio);
    m_image.fill(Qt::transparent);
    QCPPainter painter(&m_image);
    painter.translate(-view.rect.topLeft());
    drawGraphs(&painter);
    m_view = view;
    m_valid = true;
    ++m_renders;
}

void CurveCanvas::draw(QCPPainter* painter)
{
    if (m_prepare)
        m_prepare();
    // Vector export (PDF) and scaled exports (toPixmap with a scale) get the
    // curves themselves, not a bitmap of them at the screen's resolution.
    const bool exporting = painter->modes().testFlag(QCPPainter::pmVectorized)
        || painter->modes().testFlag(QCPPainter::pmNoCaching)
        || painter->transform().type() > QTransform::TxTranslate;
    if (exporting) {
        drawGraphs(painter);
        return;
    }
    const View view = currentView(painter);
    if (view.rect.isEmpty())
        return;
    if (!m_valid || !(view == m_view))
        render(view);
    painter->drawImage(view.rect.topLeft(), m_image);
}

} // namespace tb::ui
