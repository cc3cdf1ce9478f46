// MetricPlots: the live plots of one run: loss (raw and smoothed) above, learning rate and tokens/s below.
#pragma once

#include <cstdint>
#include <limits>

#include <QTimer>
#include <QVector>
#include <qcustomplot.h>

#include "ema_smoother.h"
#include "trainbench/metric_point.h"
#include "trainbench/run_config.h"

namespace trainbench::gui {

// Points are appended as they arrive and never downsampled here: QCustomPlot's adaptive
// sampling reduces each pixel column to its min/max at draw time, so spikes stay visible.
// Redraws are coalesced on a single-shot timer, at most one per kReplotIntervalMs.
// The view follows the run (x: 0 .. planned steps, y: data extent) until the user drags or
// zooms; a double click returns to following.
class MetricPlots : public QCustomPlot {
    Q_OBJECT

public:
    explicit MetricPlots(QWidget* parent = nullptr);

    // Empties every graph for a new run of `config`: x spans train.steps, and until data
    // arrives the y axes show the scales the run will start at (ln vocab_size, peak lr).
    void resetRun(const RunConfig& config);
    // Takes train/loss, eval/loss, data/entropy_floor, train/lr and perf/tokens_per_s; other
    // keys are ignored.
    void addPoints(const QVector<MetricPoint>& points);
    // Redraws now instead of at the next coalesced tick (before a screenshot, say).
    void flushReplot();
    bool replotPending() const { return replot_timer_.isActive(); }

    QCPGraph* lossRawGraph() const { return loss_raw_; }
    QCPGraph* lossSmoothedGraph() const { return loss_smoothed_; }
    QCPGraph* learningRateGraph() const { return learning_rate_; }
    QCPGraph* throughputGraph() const { return throughput_; }
    QCPGraph* evalLossGraph() const { return eval_loss_; }
    // NaN until the source reports its loss floor (synthetic data only).
    double entropyFloor() const { return entropy_floor_; }
    double smoothingWeight() const { return smoother_.weight(); }

    static constexpr int kReplotIntervalMs = 33;

private:
    void scheduleReplot();
    void replotPendingData();
    void followRun();

    QCPAxisRect* loss_rect_ = nullptr;
    QCPAxisRect* rate_rect_ = nullptr;
    QCPGraph* loss_raw_ = nullptr;
    QCPGraph* loss_smoothed_ = nullptr;
    QCPGraph* learning_rate_ = nullptr;
    QCPGraph* throughput_ = nullptr;
    QCPGraph* eval_loss_ = nullptr;
    QCPItemStraightLine* floor_line_ = nullptr;
    QCPItemText* floor_label_ = nullptr;
    double entropy_floor_ = std::numeric_limits<double>::quiet_NaN();
    QCPItemText* placeholder_ = nullptr;
    EmaSmoother smoother_{0.6};
    QTimer replot_timer_;
    int64_t planned_steps_ = 1;
    double last_step_ = 0;
    bool following_ = true;
};

}  // namespace trainbench::gui
