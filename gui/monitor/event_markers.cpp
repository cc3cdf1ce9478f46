// EventMarkers: run events (checkpoints, OOM back-offs, skipped steps, advice, faults) as vertical marks on the plots.
#include "monitor/event_markers.h"

#include <QPolygonF>

#include <optional>

#include "trainbench/event_kind.h"

namespace trainbench::gui {

namespace {

// How an event kind shows as a marker; nothing for the kinds that draw none (status, warning, ...).
struct MarkerStyle {
    QColor color;
    const char* title;
};
std::optional<MarkerStyle> markerStyle(const QString& kind) {
    const auto known = eventKindNamed(kind.toStdString());
    if (!known) return std::nullopt;
    switch (*known) {
        case EventKind::Checkpoint: return MarkerStyle{QColor(46, 139, 87), "checkpoint"};
        case EventKind::OutOfMemoryBackoff: return MarkerStyle{QColor(200, 30, 30), "OOM back-off"};
        case EventKind::SkippedStep: return MarkerStyle{QColor(148, 103, 189), "skipped step"};
        case EventKind::Advice: return MarkerStyle{QColor(190, 140, 0), "advice"};
        case EventKind::CheckpointFailed: return MarkerStyle{QColor(230, 120, 20), "checkpoint failed"};
        case EventKind::StoreUnwritable: return MarkerStyle{QColor(90, 90, 90), "store held"};
        case EventKind::BatchChange: return MarkerStyle{QColor(31, 119, 180), "batch change"};
        case EventKind::Status:
        case EventKind::Warning:
        case EventKind::Precision:
        case EventKind::StoreWritable:
        case EventKind::Sample: return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

bool isMarkerKind(const QString& kind) { return markerStyle(kind).has_value(); }

QColor markerColor(const QString& kind) {
    const auto style = markerStyle(kind);
    return style ? style->color : QColor(120, 120, 120);
}

QString markerTitle(const QString& kind) {
    const auto style = markerStyle(kind);
    return style ? QString::fromLatin1(style->title) : kind;
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
