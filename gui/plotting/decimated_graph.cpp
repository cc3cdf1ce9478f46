// Decimated graphs: the pyramid's view of the key axis, refilled only when the view changes.
#include "plotting/decimated_graph.h"

#include <limits>

namespace trainbench::gui {

DecimatedGraph::DecimatedGraph(QCPGraph* graph, std::vector<double> xs, std::vector<double> ys)
    : graph_(graph), pyramid_(std::move(xs), std::move(ys)) {
    const double infinity = std::numeric_limits<double>::infinity();
    fill(-infinity, infinity, std::max(graph_->keyAxis()->axisRect()->width(), 200));
}

void DecimatedGraph::refresh() {
    const QCPRange range = graph_->keyAxis()->range();
    const int columns = std::max(graph_->keyAxis()->axisRect()->width(), 1);
    if (columns == shown_columns_ && range == shown_range_) return;
    fill(range.lower, range.upper, columns);
    shown_range_ = range;
    shown_columns_ = columns;
}

void DecimatedGraph::fill(double x_lower, double x_upper, int columns) {
    const std::vector<CurvePoint> points = pyramid_.visible(x_lower, x_upper, columns);
    QVector<QCPGraphData> data;
    data.reserve(static_cast<int>(points.size()));
    for (const CurvePoint& p : points) data.append(QCPGraphData(p.x, p.y));
    graph_->data()->set(data, /*alreadySorted=*/true);
}

}  // namespace trainbench::gui
