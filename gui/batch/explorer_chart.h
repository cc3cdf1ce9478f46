// ExplorerChart: the batch explorer's measurements against the micro-batch size: tokens/s and peak memory.
#pragma once

#include <cstdint>
#include <vector>

#include <qcustomplot.h>

#include "trainbench/batch_explorer.h"

namespace trainbench::gui {

// x: the micro-batch size m on a log2 axis with a tick at every split; left y: tokens/s;
// right y: peak memory per rank, measured (solid) and planned (dashed), in one binary unit
// picked for the largest value. Splits that ran out of memory are crosses on the memory axis.
// The recommended split is a vertical band labelled with its m and K.
class ExplorerChart : public QCustomPlot {
    Q_OBJECT

public:
    explicit ExplorerChart(QWidget* parent = nullptr);

    // Empties the chart for an exploration of these micro-batch sizes (ascending; the x ticks).
    void resetSplits(const std::vector<int64_t>& micro_batch_sizes);
    void addRow(const ExploreRow& row);
    // `row` indexes the rows added since the reset; -1: none recommended (the band is hidden).
    void setRecommended(int row);
    // The per-rank budget: drawn as a line on the memory axis when it is on the same scale as
    // the peaks (a host's RAM beside a tiny model's megabytes would flatten every curve).
    void setBudget(int64_t limit_bytes);

    QCPGraph* throughputGraph() const { return throughput_; }
    QCPGraph* measuredPeakGraph() const { return measured_peak_; }
    QCPGraph* plannedPeakGraph() const { return planned_peak_; }

private:
    // Rows are few (the divisors of one batch): every change redraws every series from rows_.
    void rebuild();

    QCPGraph* throughput_ = nullptr;
    QCPGraph* measured_peak_ = nullptr;
    QCPGraph* planned_peak_ = nullptr;
    QCPGraph* out_of_memory_ = nullptr;
    QCPItemStraightLine* budget_line_ = nullptr;
    QCPItemText* budget_label_ = nullptr;
    QCPItemRect* recommended_band_ = nullptr;
    QCPItemText* recommended_label_ = nullptr;
    QCPItemText* placeholder_ = nullptr;
    std::vector<int64_t> splits_;
    std::vector<ExploreRow> rows_;
    int recommended_ = -1;
    int64_t budget_bytes_ = 0;
    double bytes_per_unit_ = 1024.0 * 1024.0;
};

}  // namespace trainbench::gui
