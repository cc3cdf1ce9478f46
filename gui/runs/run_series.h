// RunSeries: one run's metric points routed into named series (loss and its EMA, eval loss, grad norm, lr, throughput, the multi-token-prediction losses, memory per device, the entropy floor), without a widget.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <QVector>

#include "common/x_axis.h"
#include "runs/metric_series.h"
#include "runs/step_positions.h"
#include "trainbench/metric_point.h"

namespace trainbench::gui {

// The curves that have one metric key each, in the order the live plots draw them.
// MtpLoss: the first multi-token-prediction module's loss (train/mtp_loss/1); the deeper modules'
// (train/mtp_loss/<k>, k >= 2) are kept by key (deeperMtpKeys()).
enum class SeriesName { Loss, EvalLoss, GradNorm, LearningRate, Throughput, MtpLoss };
inline constexpr size_t kSeriesNameCount = 6;

// What one batch of points changed, for a view to redraw only that.
struct SeriesUpdate {
    // A point of a series, or train/tokens: the run moved on, and a view following it moves too.
    bool advanced = false;
    // data/entropy_floor arrived (entropyFloor()).
    bool entropy_floor = false;
};

// The one place where a metric key becomes a curve: points in, named series out, each sample
// with every x it may be drawn at and its EMA. The widgets only draw what it holds (PlotJuggler
// keeps its data layer apart from its widgets the same way), so the routing is tested without a
// window, and the live plots (MetricPlots owns one) and Compare (one per compared run, ofKey)
// read their curves from the same code.
//
// What the live plots' RunSeries keeps:
// - train/loss, eval/loss, train/grad_norm, train/lr, perf/tokens_per_s, train/mtp_loss/1: a
//   series each (series()); the losses and grad norm carry their EMA. A new curve is one line in
//   run_series.cpp's table of routes and a SeriesName.
// - mem/<device>/<kind> for the kinds of memoryKinds(), and the bytes a step moved (ioKeys():
//   io/to_device_bytes, io/to_host_bytes, io/read_bytes, io/write_bytes): one series per key
//   (memoryKeys()).
// - train/mtp_loss/<k> for k >= 2 (models with several multi-token-prediction modules): one
//   smoothed series per key (deeperMtpKeys()).
// - data/entropy_floor: a value, not a series (entropyFloor()): a property of the data.
// - train/global_batch: the newest step's sequences (stepSequences()).
// - train/tokens: the tokens seen after each step (positions()), noted before the batch's
//   samples, whichever order the batch lists them in; train/loss's wall times place events.
// Every other key is ignored.
//
// Plain data, like its MetricSeries: it lives on the thread that feeds it (the GUI thread).
class RunSeries {
public:
    static constexpr double kDefaultSmoothingWeight = 0.6;

    // The live plots' series.
    explicit RunSeries(double smoothing_weight = kDefaultSmoothingWeight);
    // `key` alone (any key, such as Compare's chosen one), smoothed whatever the live plots do
    // with it, each point at its own step, tokens and wall time (no token clock). Nothing else
    // is kept.
    static RunSeries ofKey(const std::string& key, double smoothing_weight = kDefaultSmoothingWeight);

    // Routes every point of the batch to its series (see above).
    SeriesUpdate addPoints(std::span<const MetricPoint> points);
    SeriesUpdate addPoints(const QVector<MetricPoint>& points) {
        return addPoints(std::span(points.constData(), points.size()));
    }
    // Forgets every point (a new run); the routing, smoothing weight and axis stay.
    void clear();

    // Whether addPoints keeps the points of `key`.
    bool keeps(std::string_view key) const;

    // A named series (empty for a RunSeries ofKey).
    const MetricSeries& series(SeriesName name) const { return named_[static_cast<size_t>(name)]; }
    // The series of `key`: a named one, a memory key after its first point, or the key of ofKey;
    // null for a key this RunSeries does not keep.
    const MetricSeries* seriesOfKey(std::string_view key) const;
    // The memory kinds kept ("allocated_bytes", "peak_bytes", ...), in the order the plots list them.
    static const std::vector<std::string>& memoryKinds();
    // The io/ keys kept with them, in the order the plots list them.
    static const std::vector<std::string>& ioKeys();
    // Every memory key that has points, in the order of their first point.
    const std::vector<std::string>& memoryKeys() const { return memory_order_; }
    // Every train/mtp_loss/<k> key with k >= 2 that has points, in the order of their first point.
    const std::vector<std::string>& deeperMtpKeys() const { return deeper_mtp_order_; }

    // NaN until data/entropy_floor arrives (synthetic data only).
    double entropyFloor() const { return entropy_floor_; }
    // The sequences of the newest step's window (train/global_batch); 0 until one arrives.
    double stepSequences() const { return step_sequences_; }
    // The newest step, tokens seen and wall time of any point that advanced the run.
    int64_t lastStep() const { return last_step_; }
    double lastTokens() const { return last_tokens_; }
    double lastWall() const { return last_wall_; }

    // Where each step lies on each x axis, and the axis samples are read on.
    const StepPositions& positions() const { return positions_; }
    void setAxis(XAxis axis) { positions_.setAxis(axis); }

    // Re-smooths every smoothed series in full with this weight (clamped as EmaSmoother clamps it).
    void setSmoothingWeight(double weight);
    double smoothingWeight() const { return smoothing_weight_; }

private:
    // The series a point of `key` goes to under the live plots' routing, or null.
    MetricSeries* liveSeriesFor(const std::string& key);

    // ofKey's: the one key kept, in own_.
    bool single_key_ = false;
    std::string only_key_;
    double smoothing_weight_;
    std::array<MetricSeries, kSeriesNameCount> named_;
    MetricSeries own_;  // ofKey's series
    std::map<std::string, MetricSeries, std::less<>> memory_;
    std::vector<std::string> memory_order_;
    std::map<std::string, MetricSeries, std::less<>> deeper_mtp_;
    std::vector<std::string> deeper_mtp_order_;
    StepPositions positions_;
    double entropy_floor_;
    double step_sequences_ = 0;
    int64_t last_step_ = 0;
    double last_tokens_ = 0;
    double last_wall_ = 0;
};

}  // namespace trainbench::gui
