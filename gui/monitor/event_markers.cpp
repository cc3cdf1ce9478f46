// EventMarkers: run events (checkpoints, OOM back-offs, skipped steps, advice, faults) as vertical marks on the plots.
#include "monitor/event_markers.h"

#include <QPolygonF>

namespace trainbench::gui {

bool isMarkerKind(const QString& kind) {
    return kind == QLatin1String("checkpoint") || kind == QLatin1String("oom_backoff") ||
           kind == QLatin1String("skipped_step") || kind == QLatin1String("advice") ||
           kind == QLatin1String("checkpoint_failed") || kind == QLatin1String("store_unwritable") ||
           kind == QLatin1String("batch_change");
}

QColor markerColor(const QString& kind) {
    if (kind == QLatin1String("checkpoint")) return QColor(46, 139, 87);
    if (kind == QLatin1String("oom_backoff")) return QColor(200, 30, 30);
    if (kind == QLatin1String("skipped_step")) return QColor(148, 103, 189);
    if (kind == QLatin1String("advice")) return QColor(190, 140, 0);
    if (kind == QLatin1String("checkpoint_failed")) return QColor(230, 120, 20);
    if (kind == QLatin1String("store_unwritable")) return QColor(90, 90, 90);
    if (kind == QLatin1String("batch_change")) return QColor(31, 119, 180);
    return QColor(120, 120, 120);
}

QString markerTitle(const QString& kind) {
    if (kind == QLatin1String("checkpoint")) return QStringLiteral("checkpoint");
    if (kind == QLatin1String("oom_backoff")) return QStringLiteral("OOM back-off");
    if (kind == QLatin1String("skipped_step")) return QStringLiteral("skipped step");
    if (kind == QLatin1String("advice")) return QStringLiteral("advice");
    if (kind == QLatin1String("checkpoint_failed")) return QStringLiteral("checkpoint failed");
    if (kind == QLatin1String("store_unwritable")) return QStringLiteral("store held");
    if (kind == QLatin1String("batch_change")) return QStringLiteral("batch change");
    return kind;
}

EventMarkerLayer::EventMarkerLayer(QCPAxisRect* rect, const QVector<EventMarker>* markers, bool with_flags)
    : QCPLayerable(rect->parentPlot(), QStringLiteral("grid")), rect_(rect), markers_(markers), with_flags_(with_flags) {}

void EventMarkerLayer::applyDefaultAntialiasingHint(QCPPainter* painter) const {
    painter->setAntialiasing(true);
}

QRect EventMarkerLayer::clipRect() const {
    return rect_->rect();
}

void EventMarkerLayer::draw(QCPPainter* painter) {
    const QCPAxis* x_axis = rect_->axis(QCPAxis::atBottom);
    const QRect area = rect_->rect();
    for (const EventMarker& marker : *markers_) {
        const double px = x_axis->coordToPixel(marker.x);
        if (px < area.left() - 1 || px > area.right() + 1) continue;
        const QColor color = markerColor(marker.kind);
        QColor line = color;
        line.setAlpha(170);
        painter->setPen(QPen(line, 1.3, Qt::DashLine));
        painter->drawLine(QPointF(px, area.top()), QPointF(px, area.bottom()));
        if (!with_flags_) continue;
        // A downward flag at the top names the mark by colour even where curves cover the line.
        painter->setPen(Qt::NoPen);
        painter->setBrush(color);
        const QPolygonF flag({QPointF(px - 5, area.top()), QPointF(px + 5, area.top()), QPointF(px, area.top() + 8)});
        painter->drawPolygon(flag);
    }
}

}  // namespace trainbench::gui
