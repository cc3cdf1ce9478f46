// Live decimation: the pyramid follows the graph's data; the graph draws the pyramid's view.
#include "live_decimation.h"

#include <algorithm>

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

void LiveDecimation::beginDraw() {
    if (full_) return;  // already swapped (a nested redraw)
    follow();
    const QCPRange range = graph_->keyAxis()->range();
    const int columns = std::max(graph_->keyAxis()->axisRect()->width(), 1);
    int level = 0;
    const std::vector<CurvePoint> points = pyramid_.visible(range.lower, range.upper, columns, &level);
    if (level == 0) return;  // few enough points: the graph draws them all
    QVector<QCPGraphData> shown;
    shown.reserve(static_cast<qsizetype>(points.size()));
    for (const CurvePoint& p : points) shown.append(QCPGraphData(p.x, p.y));
    view_->set(shown, /*alreadySorted=*/true);
    full_ = graph_->data();
    graph_->setData(view_);
    // A wider pen strokes every vertex of the dense envelope as a polygon with joins (a
    // smoothed loss at 2.2 px: ~700 ms a redraw at a million steps); 1 px lines are drawn
    // straight, and an envelope that fills its band looks the same either way.
    pen_ = graph_->pen();
    if (pen_.widthF() > 1.0) {
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
