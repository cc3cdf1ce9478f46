// CoalescedReplot: one redraw of a QCustomPlot for a burst of requests, at most about 30 a second.
#pragma once

#include <functional>

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

class QCustomPlot;

namespace trainbench::gui {

// Points arrive in batches many times a second; drawing each batch would take the GUI thread.
// A request arms a single-shot timer unless one is armed already, so a burst of requests
// (points, events, a user's change) rides on one redraw within kIntervalMs; a request after
// that redraw arms the next. Everything runs on the GUI thread.
//
// Paced (setPaced, off by default) is for plots whose redraw grows with the run: the wait
// counts from the last redraw instead of the request, so the first request after a quiet spell
// is drawn at the end of the event-loop turn (the pace bounds how often, not how late), and it
// grows to intervalAfter(the last redraw's time), so redrawing takes at most a quarter of the
// GUI thread however long the run is.
class CoalescedReplot : public QObject {
    Q_OBJECT

public:
    static constexpr int kIntervalMs = 33;
    static constexpr int kMaxIntervalMs = 1000;

    // `redraw` does the drawing (rebuilding what the plot shows first, say); without one the
    // plot's own replot() is called. A child of `plot`.
    explicit CoalescedReplot(QCustomPlot* plot, std::function<void()> redraw = {});

    // Asks for a redraw; requests before it is drawn ride on the same one.
    void request();
    // A user's change (an axis, a scale): drawn within kIntervalMs even when paced longer.
    void requestSoon();
    // Draws now; the pending redraw, if any, is dropped (before a screenshot, say).
    void flush();
    bool pending() const { return timer_.isActive(); }

    void setPaced(bool paced) { paced_ = paced; }
    // The wait before the next redraw: kIntervalMs, or intervalAfter the last when paced.
    int intervalMs() const { return interval_ms_; }
    // Three times `redraw_ms`, within [kIntervalMs, kMaxIntervalMs] (a million steps: ~140 ms
    // a redraw, so ~420 ms between them).
    static int intervalAfter(double redraw_ms);

private:
    void draw();

    QCustomPlot* plot_ = nullptr;
    std::function<void()> redraw_;
    QTimer timer_;
    bool paced_ = false;
    int interval_ms_ = kIntervalMs;
    QElapsedTimer last_draw_;  // since the last redraw
};

}  // namespace trainbench::gui
