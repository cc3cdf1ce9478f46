// MetricPlots: the live plots of one run: loss, gradient norm, learning rate with tokens/s, and memory per device.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <QVector>
#include <qcustomplot.h>

#include "monitor/event_markers.h"
#include "monitor/metric_plot_layout.h"
#include "monitor/plot_crosshair.h"
#include "plotting/coalesced_replot.h"
#include "plotting/live_decimation.h"
#include "common/x_axis.h"
#include "runs/run_series.h"
#include "trainbench/metric_point.h"
#include "trainbench/run_config.h"

namespace trainbench::gui {

// Points are appended as they arrive and never downsampled here: QCustomPlot's adaptive
// sampling reduces each pixel column to its min/max at draw time, so spikes stay visible.
// Its RunSeries (runs/) decides which key becomes which curve and keeps every point with its
// step, tokens seen, wall time and EMA, so the x axis can switch between them without losing
// anything; this class draws what each series gained, owns the marks and follows the run. The
// rows and their axes are a MetricPlotLayout, the crosshair a PlotCrosshair. Redraws are
// coalesced and paced (CoalescedReplot): at most one per kReplotIntervalMs, or longer when
// redraws are slow (replotIntervalAfter), and the first batch after a quiet spell at once; the
// crosshair redraws only its own buffered layer.
// The view follows the run (x: 0 .. planned end, y: the curve's extent without outliers) until
// the user drags or zooms; a double click returns to following.
class MetricPlots : public QCustomPlot {
    Q_OBJECT

public:
    // The rows, top to bottom (see MetricPlotLayout).
    using Plot = MetricPlot;

    explicit MetricPlots(QWidget* parent = nullptr);

    // Empties every graph and mark for a new run of `config`: x spans train.steps, and until
    // data arrives the y axes show the scales the run will start at (ln vocab_size, peak lr).
    void resetRun(const RunConfig& config);
    // Hands the points to runSeries() (its routing says which keys are drawn: train/loss,
    // eval/loss, train/grad_norm, train/lr, perf/tokens_per_s, memory per device, the entropy
    // floor; train/tokens maps each step to the tokens seen) and draws what its series gained.
    void addPoints(const QVector<MetricPoint>& points);
    // The run's points as series, as drawn.
    const RunSeries& runSeries() const { return run_series_; }
    // Marks a checkpoint, oom_backoff, skipped_step or advice event at its step; returns
    // false (and marks nothing) for other kinds.
    bool addEvent(const RunEvent& event);
    // `wall_time` NaN: the wall time of `step`'s points, once known.
    void addEventMarker(int64_t step, const QString& kind, const QString& text,
                        double wall_time = std::numeric_limits<double>::quiet_NaN());
    const QVector<EventMarker>& eventMarkers() const { return markers_; }

    // Redraws now instead of at the next coalesced tick (before a screenshot, say).
    void flushReplot();
    bool replotPending() const { return replot_->pending(); }

    void setXAxis(XAxis axis);
    XAxis xAxis() const { return run_series_.positions().axis(); }
    // Loss, GradNorm and Memory; Rates stays linear (the learning rate starts at zero).
    void setLogY(Plot plot, bool logarithmic);
    bool logY(Plot plot) const;
    // On (the default): y ranges span the 5th..95th percentile of the visible points plus a
    // margin, so one spike cannot flatten a curve; the spike is still drawn, clipped.
    void setIgnoreOutliers(bool ignore);
    bool ignoreOutliers() const { return ignore_outliers_; }
    // Re-smooths the full series of loss and gradient norm with this EMA weight.
    void setSmoothingWeight(double weight);
    double smoothingWeight() const { return run_series_.smoothingWeight(); }
    // Auto range and following the newest step, as a double click does.
    void followLatest();
    bool following() const { return following_; }

    // The crosshair: a vertical line at x (in current x-axis units) on every row, and per row
    // a label with each curve's value at its point nearest to x, with units.
    void showCrosshairAt(double x) { crosshair_->showAt(x); }
    void hideCrosshair() { crosshair_->hide(); }
    bool crosshairVisible() const { return crosshair_->visible(); }
    // Every crosshair label, top row first, one line per curve.
    QString crosshairText() const { return crosshair_->text(); }

    // PNG or PDF by the file's suffix; width/height 0 take the widget's size. False when the
    // suffix is neither or the file cannot be written.
    bool exportPlot(const QString& path, int width = 0, int height = 0);

    QCPAxisRect* plotRect(Plot plot) const { return layout_->rect(plot); }
    QCPGraph* lossRawGraph() const { return loss_.raw; }
    QCPGraph* lossSmoothedGraph() const { return loss_.smoothed; }
    QCPGraph* evalLossGraph() const { return eval_loss_.raw; }
    QCPGraph* mtpLossSmoothedGraph() const { return mtp_loss_.smoothed; }
    // The EMA graph of a deeper module's loss (train/mtp_loss/<k>, k >= 2); null before its points.
    QCPGraph* deeperMtpLossGraph(const std::string& key) const;
    QCPGraph* gradNormRawGraph() const { return grad_norm_.raw; }
    QCPGraph* gradNormSmoothedGraph() const { return grad_norm_.smoothed; }
    QCPGraph* learningRateGraph() const { return learning_rate_.raw; }
    QCPGraph* throughputGraph() const { return throughput_.raw; }
    // The graph of one memory key (mem/cpu0/peak_bytes), or null before its first point.
    QCPGraph* memoryGraph(const QString& key) const;
    int memoryGraphCount() const { return static_cast<int>(memory_.size()); }
    // NaN until the source reports its loss floor (synthetic data only).
    double entropyFloor() const { return run_series_.entropyFloor(); }

    static constexpr int kReplotIntervalMs = CoalescedReplot::kIntervalMs;
    static constexpr int kMaxReplotIntervalMs = CoalescedReplot::kMaxIntervalMs;
    // The wait before the next coalesced redraw after one that took `redraw_ms`
    // (CoalescedReplot::intervalAfter).
    static int replotIntervalAfter(double redraw_ms) { return CoalescedReplot::intervalAfter(redraw_ms); }
    int replotIntervalMs() const { return replot_->intervalMs(); }
    static constexpr double kLowerQuantile = 0.05;
    static constexpr double kUpperQuantile = 0.95;

Q_SIGNALS:
    void followingChanged(bool following);

protected:
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    enum class ValueFormat { Loss, Plain, Rate, Bytes };
    struct Series {
        QString label;
        QString unit;
        QString group;  // memory: the device, whose curves share one crosshair line
        ValueFormat format = ValueFormat::Plain;
        QCPGraph* raw = nullptr;
        QCPGraph* smoothed = nullptr;  // null for curves drawn without smoothing
        // The points as they arrived (run_series_'s), for redrawing against any x axis, and
        // how many of them the graphs hold.
        const MetricSeries* data = nullptr;
        size_t drawn = 0;
        // How the graphs are drawn once the run outgrows the plot's width.
        std::shared_ptr<LiveDecimation> raw_drawn;
        std::shared_ptr<LiveDecimation> smoothed_drawn;
    };

    void initSeries(Series& series, const MetricSeries* data, QCPAxis* x, QCPAxis* y, const QString& label,
                    const QString& unit, ValueFormat format, const QPen& pen);
    // Appends the samples its series gained since the last draw to its graphs.
    void drawNewSamples(Series& series);
    Series& memorySeries(const std::string& key);
    // A deeper module's loss curve on the loss row, made at its first point.
    Series& deeperMtpSeries(const std::string& key);
    void showEntropyFloor(double floor);
    void rebuildMemoryLegend();
    QString memoryLineAt(const std::string& device, double x) const;
    double xOf(const SeriesSample& sample) const { return run_series_.positions().xOf(sample); }
    double markerX(const EventMarker& marker, double wall) const;
    void rebuildGraphs(Series& series);
    // The series' graph data changed other than at the end: its decimations read it again.
    void invalidateDrawn(Series& series);
    // Every series' graphs' decimation, for the draw's start and end.
    std::vector<LiveDecimation*> decimations();
    void rebuildMarkers();
    void showMarkerLegend(const QString& kind);
    QString formatValue(const Series& series, double value) const;
    QString seriesLineAt(const Series& series, double x) const;
    QString positionLineAt(double x) const;
    // What the crosshair's label on `rect`'s row says at x.
    QStringList crosshairLines(const QCPAxisRect* rect, double x) const;
    void setFollowing(bool following);
    // What each coalesced redraw does before drawing: follow the run, move the crosshair.
    void replotPendingData();
    void followRun();
    void fitRow(Plot plot, const QCPRange& keys);
    void fitValueAxis(QCPAxis* axis, const std::vector<const QCPGraph*>& graphs, const QCPRange& keys,
                      bool robust, bool from_zero, double keep_in_view = std::numeric_limits<double>::quiet_NaN());
    static QCPAxis* xAxisOf(const QCPAxisRect* rect) { return MetricPlotLayout::xAxisOf(rect); }

    // The run's points, routed into the series drawn below (their Series point into it).
    RunSeries run_series_;
    std::unique_ptr<MetricPlotLayout> layout_;
    std::unique_ptr<PlotCrosshair> crosshair_;
    QCPAxisRect* loss_rect_ = nullptr;
    QCPAxisRect* grad_rect_ = nullptr;
    QCPAxisRect* rate_rect_ = nullptr;
    QCPAxisRect* memory_rect_ = nullptr;
    QCPLegend* memory_legend_ = nullptr;
    Series loss_;
    Series eval_loss_;
    Series grad_norm_;
    Series learning_rate_;
    Series throughput_;
    Series mtp_loss_;  // the first multi-token-prediction module's (runs with model.n_mtp_depth)
    std::map<std::string, Series> deeper_mtp_;  // the deeper modules' losses, by metric key
    std::map<std::string, Series> memory_;  // by metric key
    std::map<std::string, QColor> device_colors_;
    // Empty graphs that give the memory legend one entry per device (its colour) and one per
    // kind of memory (its line style), instead of one per curve.
    std::vector<QCPGraph*> memory_legend_entries_;
    QCPItemStraightLine* floor_line_ = nullptr;
    QCPItemText* floor_label_ = nullptr;
    QCPItemText* placeholder_ = nullptr;

    QVector<EventMarker> markers_;
    QVector<double> marker_walls_;  // parallel to markers_: NaN until known
    std::map<QString, QCPGraph*> marker_legend_;  // empty graphs that put a kind in the legend

    bool ignore_outliers_ = true;
    CoalescedReplot* replot_ = nullptr;
    int64_t planned_steps_ = 1;
    double planned_tokens_ = 0;
    bool adaptive_ = false;    // train.batch_policy adaptive: the planned steps are an upper bound
    double seq_len_ = 1;
    bool following_ = true;
};

}  // namespace trainbench::gui
