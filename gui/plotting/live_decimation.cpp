// Live decimation: the pyramid follows the graph's data; the graph draws the pyramid's view.
#include "plotting/live_decimation.h"

#include <algorithm>
#include <cmath>

namespace trainbench::gui {

void LiveDecimation::follow() {
    const QSharedPointer<QCPGraphDataContainer> data = graph_->data();
    const auto count = static_cast<size_t>(data->size());
    // Points arrive in step order, so what is new is the container's tail; a point that
    // landed before the end instead (its last followed point moved) means reading it all.
    const bool tail_only = !stale_ && count >= pyramid_.size() &&
                           (pyramid_.size() == 0 ||
                            (data->constBegin() + static_cast<qsizetype>(pyramid_.size() - 1))->key == pyramid_.xs().back());
    if (!tail_only) {
        std::vector<double> xs, ys;
        xs.reserve(count);
        ys.reserve(count);
        for (auto it = data->constBegin(); it != data->constEnd(); ++it) {
            xs.push_back(it->key);
            ys.push_back(it->value);
        }
        pyramid_ = MinMaxPyramid(std::move(xs), std::move(ys));
        stale_ = false;
        return;
    }
    for (auto it = data->constBegin() + static_cast<qsizetype>(pyramid_.size()); it != data->constEnd(); ++it)
        pyramid_.append(it->key, it->value);
}

bool LiveDecimation::isBand(const std::vector<CurvePoint>& points) {
    size_t turns = 0, steps = 0;
    double last_rise = 0;
    for (size_t i = 1; i < points.size(); ++i) {
        const double rise = points[i].y - points[i - 1].y;
        if (!std::isfinite(rise) || rise == 0) continue;
        ++steps;
        if (last_rise != 0 && (rise > 0) != (last_rise > 0)) ++turns;
        last_rise = rise;
    }
    return steps > 0 && 4 * turns > steps;
}

void LiveDecimation::beginDraw() {
    if (full_) return;  // already swapped (a nested redraw)
    follow();
    const QCPRange range = graph_->keyAxis()->range();
    // The plot's width, not the axis rect's: this runs before the redraw lays the plot out,
    // and the rect may still have the size of an export drawn in between.
    const int columns = std::max(graph_->parentPlot()->viewport().width(), 1);
    int level = 0;
    const std::vector<CurvePoint> points = pyramid_.visible(range.lower, range.upper, columns, &level);
    if (level == 0) return;  // few enough points: the graph draws them all
    QVector<QCPGraphData> shown;
    shown.reserve(static_cast<qsizetype>(points.size()));
    for (const CurvePoint& p : points) shown.append(QCPGraphData(p.x, p.y));
    view_->set(shown, /*alreadySorted=*/true);
    full_ = graph_->data();
    graph_->setData(view_);
    // A wider pen strokes a zig-zag of thousands of vertices as one self-overlapping polygon
    // with joins (a noisy smoothed loss at 2.2 px: ~700 ms a redraw at a million steps); 1 px
    // lines are drawn straight, and a band that turns back on itself at every other point
    // looks the same. A view that mostly runs one way (a schedule, memory) keeps its pen and
    // its dashes.
    pen_ = graph_->pen();
    if (pen_.widthF() > 1.0 && isBand(points)) {
        QPen thin = pen_;
        thin.setWidthF(1.0);
        graph_->setPen(thin);
    }
}

void LiveDecimation::endDraw() {
    if (!full_) return;
    graph_->setData(full_);
    graph_->setPen(pen_);
    full_.reset();
}

}  // namespace trainbench::gui
