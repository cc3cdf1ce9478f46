// CoalescedReplot: one redraw of a QCustomPlot for a burst of requests, at most about 30 a second.
#include "plotting/coalesced_replot.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <qcustomplot.h>

namespace trainbench::gui {

CoalescedReplot::CoalescedReplot(QCustomPlot* plot, std::function<void()> redraw)
    : QObject(plot), plot_(plot), redraw_(std::move(redraw)) {
    timer_.setSingleShot(true);
    timer_.setInterval(kIntervalMs);
    connect(&timer_, &QTimer::timeout, this, &CoalescedReplot::draw);
}

void CoalescedReplot::request() {
    if (timer_.isActive()) return;
    if (!paced_) {
        timer_.start(kIntervalMs);
        return;
    }
    const qint64 since = last_draw_.isValid() ? last_draw_.elapsed() : interval_ms_;
    timer_.start(static_cast<int>(std::max<qint64>(0, interval_ms_ - since)));
}

void CoalescedReplot::requestSoon() {
    // A user's change is drawn at the base pace, not the data's.
    if (!timer_.isActive() || timer_.remainingTime() > kIntervalMs) timer_.start(kIntervalMs);
}

void CoalescedReplot::flush() {
    timer_.stop();
    draw();
}

int CoalescedReplot::intervalAfter(double redraw_ms) {
    const double wait = std::ceil(3.0 * std::max(0.0, redraw_ms));
    return static_cast<int>(std::clamp(wait, double(kIntervalMs), double(kMaxIntervalMs)));
}

void CoalescedReplot::draw() {
    QElapsedTimer took;
    took.start();
    if (redraw_)
        redraw_();
    else
        plot_->replot();
    if (paced_) interval_ms_ = intervalAfter(took.nsecsElapsed() / 1e6);
    last_draw_.start();
}

}  // namespace trainbench::gui
