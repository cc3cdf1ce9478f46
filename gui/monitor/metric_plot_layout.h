// MetricPlotLayout: the rows of the live plots (loss, gradient norm, learning rate with tokens/s, memory) and their axes.
#pragma once

#include <array>

#include <QFont>
#include <qcustomplot.h>

#include "common/x_axis.h"
#include "trainbench/run_config.h"

namespace trainbench::gui {

// The rows, top to bottom. Rates holds the learning rate (left axis) and tokens/s (right).
enum class MetricPlot { Loss, GradNorm, Rates, Memory };

// One axis rect per row, stacked in the plot's layout grid (the loss row twice as tall). The
// rows share one x axis in effect: the same margins left and right so the axes line up, every
// x axis dragged or zoomed with the others, and only the bottom row's x axis labelled. The
// layout knows axes, scales and tickers; what is drawn on them belongs to MetricPlots.
class MetricPlotLayout {
public:
    // Builds the rows in `plot`, whose own axis rect becomes the loss row.
    explicit MetricPlotLayout(QCustomPlot* plot);

    QCPAxisRect* rect(MetricPlot row) const { return rects_[static_cast<size_t>(row)]; }
    const std::array<QCPAxisRect*, 4>& rects() const { return rects_; }
    static QCPAxis* xAxisOf(const QCPAxisRect* rect) { return rect->axis(QCPAxis::atBottom); }
    static QCPAxis* yAxisOf(const QCPAxisRect* rect) { return rect->axis(QCPAxis::atLeft); }
    // The Rates row's axes: the learning rate at the left, tokens/s at the right.
    QCPAxis* learningRateAxis() const { return yAxisOf(rect(MetricPlot::Rates)); }
    QCPAxis* throughputAxis() const { return rect(MetricPlot::Rates)->axis(QCPAxis::atRight); }

    // The fonts of legends and labels drawn over the rows: one point smaller than the widget's.
    const QFont& smallFont() const { return small_font_; }
    static void styleLegend(QCPLegend* legend, const QFont& font);

    // The y axes' ranges before a run of `config` has data: the scales it will start at (its
    // first loss near ln vocab_size, its peak learning rate), on linear or log axes alike.
    void resetRanges(const RunConfig& config);
    // Ticks and title of every x axis for `axis`.
    void applyXAxis(XAxis axis);
    // A log or linear left axis for Loss, GradNorm or Memory (Rates stays linear: the learning
    // rate starts at zero). False when nothing changed.
    bool setLogY(MetricPlot row, bool logarithmic);
    bool logY(MetricPlot row) const;

private:
    std::array<QCPAxisRect*, 4> rects_{};
    QFont small_font_;
};

}  // namespace trainbench::gui
