// DecimatedGraph: a QCPGraph that holds only what its current view can show of a long curve.
#pragma once

#include <memory>

#include <qcustomplot.h>

#include "plotting/min_max_pyramid.h"

namespace trainbench::gui {

// QCustomPlot visits every point in the key range at each redraw, even with adaptive sampling;
// ten curves of a million points cost 40-50 ms a frame. This keeps the full curve in a
// MinMaxPyramid and gives the graph at most about 8 points per pixel column of the view, so
// a redraw costs the plot's width, not the curve's length. refresh() before each redraw
// (QCustomPlot::beforeReplot) refills the graph when the key range or the width changed.
class DecimatedGraph {
public:
    // `xs` must be ascending. The graph is filled at once for the whole curve (so rescaling
    // the axes to the graph sees its true extent and extremes).
    DecimatedGraph(QCPGraph* graph, std::vector<double> xs, std::vector<double> ys);
    void refresh();
    QCPGraph* graph() const { return graph_; }
    const MinMaxPyramid& pyramid() const { return pyramid_; }

private:
    void fill(double x_lower, double x_upper, int columns);
    QCPGraph* graph_;
    MinMaxPyramid pyramid_;
    QCPRange shown_range_;
    int shown_columns_ = -1;
};

}  // namespace trainbench::gui
