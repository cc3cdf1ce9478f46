// LiveDecimation: a growing graph drawn at the cost of the plot's width, not the run's length.
#pragma once

#include <qcustomplot.h>

#include "plotting/min_max_pyramid.h"

namespace trainbench::gui {

// A live graph keeps every point in its data (what fitting the axes, the crosshair and the
// CSV export read). Drawn as it is, a run of a million steps costs ~700 ms a redraw:
// QCustomPlot's adaptive sampling visits every point. This follows the graph's data with a
// MinMaxPyramid (appending what is new at each redraw) and, only while QCustomPlot draws,
// gives the graph the pyramid's view of the visible range instead: the same envelope, at most
// about 8 points a pixel column, a band of them stroked at 1 px. Outside a redraw the graph
// holds its full data and pen again. (Exports draw without these signals: every point.)
class LiveDecimation {
public:
    explicit LiveDecimation(QCPGraph* graph) : graph_(graph) {}

    // The graph's data was replaced or cleared (another x axis, new smoothing, a new run).
    void invalidate() { stale_ = true; }
    // Before drawing (QCustomPlot::beforeReplot): follows the data, and swaps in the view
    // when the visible range holds more points than the plot can show.
    void beginDraw();
    // After drawing (QCustomPlot::afterReplot): the full data back.
    void endDraw();

    // True when more than one step in four of the view turns back (a noisy curve's min/max
    // band rather than a line).
    static bool isBand(const std::vector<CurvePoint>& points);

private:
    void follow();

    QCPGraph* graph_;
    MinMaxPyramid pyramid_{{}, {}};
    bool stale_ = true;
    QSharedPointer<QCPGraphDataContainer> full_;  // the graph's own data while the view is drawn
    QPen pen_;                                     // the graph's own pen, likewise
    QSharedPointer<QCPGraphDataContainer> view_ = QSharedPointer<QCPGraphDataContainer>::create();
};

}  // namespace trainbench::gui
