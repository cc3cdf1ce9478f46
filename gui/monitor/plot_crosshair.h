// PlotCrosshair: a vertical line through every row of a plot at the cursor's x, and per row a label with what the curves read there.
#pragma once

#include <functional>
#include <limits>
#include <vector>

#include <QFont>
#include <QString>
#include <QStringList>
#include <qcustomplot.h>

namespace trainbench::gui {

// The items live on QCustomPlot's "overlay" layer, which it buffers on its own: moving the
// crosshair repaints that layer only, not every curve. What a row's label says comes from
// `lines_at` (the plot knows its curves); the crosshair only places lines and labels.
class PlotCrosshair {
public:
    // The label lines of `rect`'s row at x; empty strings are dropped, no lines hide the label.
    using LinesAt = std::function<QStringList(const QCPAxisRect* rect, double x)>;

    // One line and one label per rect of `rects`, all reading the first rect's x axis.
    PlotCrosshair(QCustomPlot* plot, std::vector<QCPAxisRect*> rects, const QFont& font, LinesAt lines_at);

    // Places the crosshair at x (current x-axis units) and repaints the overlay.
    void showAt(double x);
    // Moves it and rewrites its labels without drawing (a full redraw follows).
    void place(double x);
    void hide();
    bool visible() const;
    // Where it stands; NaN while hidden.
    double x() const { return x_; }
    // Every visible label, top row first, one line per curve.
    QString text() const;

private:
    struct Row {
        QCPAxisRect* rect = nullptr;
        QCPItemStraightLine* line = nullptr;
        QCPItemText* label = nullptr;
    };

    QCustomPlot* plot_ = nullptr;
    std::vector<Row> rows_;
    LinesAt lines_at_;
    double x_ = std::numeric_limits<double>::quiet_NaN();
};

// The point of `graph` whose key is nearest to x; false when it has none.
bool nearestPoint(const QCPGraph* graph, double x, QCPGraphData* out);

}  // namespace trainbench::gui
