// EventMarkers: run events (checkpoints, OOM back-offs, skipped steps, advice) as vertical marks on the plots.
#pragma once

#include <cstdint>

#include <QColor>
#include <QString>
#include <QVector>
#include <qcustomplot.h>

namespace trainbench::gui {

struct EventMarker {
    int64_t step = 0;
    double x = 0.0;  // where the mark stands on the current x axis
    QString kind;    // a RunEvent kind: checkpoint | oom_backoff | skipped_step | advice
    QString text;
};

// The event kinds drawn as marks; the others (status, info, ...) only go to the event log.
bool isMarkerKind(const QString& kind);
QColor markerColor(const QString& kind);
// What the legend and tooltips call a kind ("OOM back-off").
QString markerTitle(const QString& kind);

// Draws every marker of a shared list as a dashed vertical line across one axis rect, with a
// small flag at its top. One layerable per rect draws them all: a long run can hold hundreds of
// checkpoints and skipped steps, and hundreds of QCustomPlot items would each cost a draw call
// and a hit test. It never takes mouse clicks (selectTest stays -1), so drag and zoom pass through.
class EventMarkerLayer : public QCPLayerable {
public:
    EventMarkerLayer(QCPAxisRect* rect, const QVector<EventMarker>* markers, bool with_flags);

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override;
    QRect clipRect() const override;
    void draw(QCPPainter* painter) override;

private:
    QCPAxisRect* rect_;
    const QVector<EventMarker>* markers_;
    bool with_flags_;
};

}  // namespace trainbench::gui
