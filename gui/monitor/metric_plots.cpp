// MetricPlots: the live plots of one run: loss, gradient norm, learning rate with tokens/s, and memory per device.
#include "monitor/metric_plots.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <span>

#include <QFileInfo>
#include <QToolTip>

#include "trainbench/metric_keys.h"
#include "trainbench/batch_schedule.h"
#include "common/display_format.h"
#include "plotting/plot_tickers.h"
#include "plotting/robust_range.h"

namespace trainbench::gui {

namespace {

const QColor kLossColor(31, 119, 180);
const QColor kGradColor(140, 86, 75);
const QColor kRateColor(230, 120, 20);
const QColor kThroughputColor(44, 160, 44);  // as the axes of MetricPlotLayout
const QColor kEvalColor(214, 39, 40);
const QColor kMtpColor(148, 103, 189);  // the multi-token-prediction loss
// One colour per device, in order of appearance; the kind of memory is the line style.
const QColor kDeviceColors[] = {QColor(31, 119, 180), QColor(214, 39, 40), QColor(44, 160, 44),
                                QColor(148, 103, 189), QColor(255, 127, 14), QColor(23, 190, 207),
                                QColor(140, 86, 75), QColor(227, 119, 194)};

constexpr double kPadding = 0.08;
constexpr double kMarkerHoverPx = 5.0;

// How each memory kind RunSeries keeps (RunSeries::memoryKinds) is drawn and called, in the
// order the legend and the crosshair list them.
struct MemoryKind {
    const char* suffix;
    const char* title;
    Qt::PenStyle style;
    double width;
};
const MemoryKind kMemoryKinds[] = {
    {metric::kAllocatedBytes, "allocated", Qt::SolidLine, 1.6},
    {metric::kPeakBytes, "peak", Qt::DashLine, 1.6},
    {metric::kReservedBytes, "reserved", Qt::DotLine, 1.6},
    {metric::kDeviceUsedBytes, "device used", Qt::DashDotLine, 1.4},
    {metric::kHostBytes, "host (offload)", Qt::DashDotDotLine, 1.4},  // runtime.offload's host tier
};

// What every rank moved in the step (RunSeries::ioKeys), in the same row under one name and
// colour of their own; the key is the whole key.
constexpr char kIoGroup[] = "moved a step";
const MemoryKind kIoKinds[] = {
    {metric::kHostToDeviceBytes, "to the devices", Qt::SolidLine, 1.2},
    {metric::kDeviceToHostBytes, "to the host", Qt::DashLine, 1.2},
    {metric::kOffloadReadBytes, "NVMe read", Qt::DotLine, 1.2},
    {metric::kOffloadWriteBytes, "NVMe written", Qt::DashDotLine, 1.2},
};

const MemoryKind* memoryKindOf(const std::string& key, std::string* device) {
    for (const MemoryKind& kind : kIoKinds)
        if (key == kind.suffix) {
            *device = kIoGroup;
            return &kind;
        }
    const auto parsed = metric::parseMemoryKey(key);
    if (!parsed) return nullptr;
    for (const MemoryKind& kind : kMemoryKinds) {
        if (parsed->what == kind.suffix) {
            *device = parsed->device;
            return &kind;
        }
    }
    return nullptr;
}

// The visible points of a graph, at most about kMaxExactValues of them taken at an even stride.
QVector<double> visibleValues(const QCPGraph* graph, const QCPRange& keys) {
    QVector<double> values;
    const auto data = graph->data();
    auto begin = data->findBegin(keys.lower, false);
    auto end = data->findEnd(keys.upper, false);
    const auto count = static_cast<qsizetype>(end - begin);
    if (count <= 0) return values;
    const qsizetype stride = std::max<qsizetype>(1, count / kMaxExactValues);
    values.reserve(count / stride + 1);
    for (auto it = begin; it < end; it += stride) values.push_back(it->value);
    return values;
}

}  // namespace

MetricPlots::MetricPlots(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("metricPlots"));
    // (with the critical batch and expert load below it and the tabs above, the window still fits
    // 1280 x 800: their minimums and the chrome together stay under that height)
    setMinimumSize(480, 400);
    setNoAntialiasingOnDrag(true);
    setAutoAddPlottableToLegend(false);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    setMouseTracking(true);
    replot_ = new CoalescedReplot(this, [this] { replotPendingData(); });
    replot_->setPaced(true);

    layout_ = std::make_unique<MetricPlotLayout>(this);
    loss_rect_ = layout_->rect(Plot::Loss);
    grad_rect_ = layout_->rect(Plot::GradNorm);
    rate_rect_ = layout_->rect(Plot::Rates);
    memory_rect_ = layout_->rect(Plot::Memory);
    const QFont& small_font = layout_->smallFont();
    QCPAxis* lr_axis = layout_->learningRateAxis();
    QCPAxis* tps_axis = layout_->throughputAxis();

    // Marks go under the curves, on the grid layer, so they never hide a value.
    new EventMarkerLayer(loss_rect_, &markers_, /*with_flags=*/true);
    for (QCPAxisRect* rect : {grad_rect_, rate_rect_, memory_rect_}) new EventMarkerLayer(rect, &markers_, false);

    QColor faint = kLossColor;
    faint.setAlpha(80);
    initSeries(loss_, &run_series_.series(SeriesName::Loss), xAxisOf(loss_rect_), loss_rect_->axis(QCPAxis::atLeft),
               tr("loss"), tr("nats/token"), ValueFormat::Loss, QPen(kLossColor, 2.2));
    // Noisy curves are drawn with 1 px pens: a wider pen strokes every min/max vertex the
    // adaptive sampling keeps, 20x slower at a million steps (docs/BENCHMARKS.md).
    loss_.raw->setPen(QPen(faint, 1.0));
    initSeries(eval_loss_, &run_series_.series(SeriesName::EvalLoss), xAxisOf(loss_rect_),
               loss_rect_->axis(QCPAxis::atLeft), tr("eval loss"), tr("nats/token"), ValueFormat::Loss, QPen(kEvalColor));
    eval_loss_.raw->setLineStyle(QCPGraph::lsNone);
    eval_loss_.raw->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kEvalColor, kEvalColor, 7));
    // The multi-token-prediction loss beside the main one: its EMA drawn, its raw points faint.
    initSeries(mtp_loss_, &run_series_.series(SeriesName::MtpLoss), xAxisOf(loss_rect_),
               loss_rect_->axis(QCPAxis::atLeft), tr("MTP loss, depth 1"), tr("nats/token"), ValueFormat::Loss,
               QPen(kMtpColor, 1.6));
    QColor faint_mtp = kMtpColor;
    faint_mtp.setAlpha(60);
    mtp_loss_.raw->setPen(QPen(faint_mtp, 1.0));
    QColor faint_grad = kGradColor;
    faint_grad.setAlpha(80);
    initSeries(grad_norm_, &run_series_.series(SeriesName::GradNorm), xAxisOf(grad_rect_),
               grad_rect_->axis(QCPAxis::atLeft), tr("grad norm"), QString(), ValueFormat::Plain, QPen(kGradColor, 1.8));
    grad_norm_.raw->setPen(QPen(faint_grad, 1.0));
    initSeries(learning_rate_, &run_series_.series(SeriesName::LearningRate), xAxisOf(rate_rect_), lr_axis, tr("lr"),
               QString(), ValueFormat::Plain, QPen(kRateColor, 1.8));
    initSeries(throughput_, &run_series_.series(SeriesName::Throughput), xAxisOf(rate_rect_), tps_axis,
               tr("throughput"), tr("tokens/s"), ValueFormat::Rate, QPen(kThroughputColor, 1.0));

    // The lowest reachable loss of a synthetic language: a dashed line the curve approaches.
    floor_line_ = new QCPItemStraightLine(this);
    floor_line_->setClipAxisRect(loss_rect_);
    for (QCPItemPosition* end : {floor_line_->point1, floor_line_->point2}) {
        end->setAxes(xAxisOf(loss_rect_), loss_rect_->axis(QCPAxis::atLeft));
        end->setAxisRect(loss_rect_);
    }
    floor_line_->setPen(QPen(QColor(110, 110, 110), 1.2, Qt::DashLine));
    floor_label_ = new QCPItemText(this);
    floor_label_->setClipAxisRect(loss_rect_);
    floor_label_->position->setAxes(xAxisOf(loss_rect_), loss_rect_->axis(QCPAxis::atLeft));
    floor_label_->position->setAxisRect(loss_rect_);
    floor_label_->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    floor_label_->setColor(QColor(90, 90, 90));
    floor_label_->setFont(small_font);

    MetricPlotLayout::styleLegend(legend, small_font);
    loss_.raw->addToLegend(legend);
    loss_.smoothed->addToLegend(legend);
    eval_loss_.raw->addToLegend(legend);
    loss_rect_->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);


    placeholder_ = new QCPItemText(this);
    placeholder_->setClipAxisRect(loss_rect_);
    placeholder_->position->setType(QCPItemPosition::ptAxisRectRatio);
    placeholder_->position->setAxisRect(loss_rect_);
    placeholder_->position->setCoords(0.5, 0.5);
    placeholder_->setPositionAlignment(Qt::AlignCenter);
    placeholder_->setText(tr("Press Start to train: the loss appears here as steps complete."));
    placeholder_->setColor(QColor(130, 130, 130));
    placeholder_->setFont(font());

    crosshair_ = std::make_unique<PlotCrosshair>(
        this, std::vector<QCPAxisRect*>(layout_->rects().begin(), layout_->rects().end()), small_font,
        [this](const QCPAxisRect* rect, double x) { return crosshairLines(rect, x); });

    // A long run is drawn through its pyramid: the view swapped in for the draw, the full data
    // back after it.
    connect(this, &QCustomPlot::beforeReplot, this, [this] {
        for (LiveDecimation* drawn : decimations()) drawn->beginDraw();
    });
    connect(this, &QCustomPlot::afterReplot, this, [this] {
        for (LiveDecimation* drawn : decimations()) drawn->endDraw();
    });

    // Any manual view change stops following the run until a double click.
    connect(this, &QCustomPlot::mousePress, this, [this](QMouseEvent*) { setFollowing(false); });
    connect(this, &QCustomPlot::mouseWheel, this, [this](QWheelEvent*) { setFollowing(false); });

    layout_->applyXAxis(xAxis());
    resetRun(RunConfig{});
}

void MetricPlots::initSeries(Series& series, const MetricSeries* data, QCPAxis* x, QCPAxis* y, const QString& label,
                             const QString& unit, ValueFormat format, const QPen& pen) {
    // A series with an EMA gets a second graph for it.
    const bool smoothed = data->smoothed();
    series.label = label;
    series.unit = unit;
    series.format = format;
    series.data = data;
    series.drawn = 0;
    series.raw = addGraph(x, y);
    series.raw->setAdaptiveSampling(true);
    series.raw->setPen(pen);
    series.raw->setName(smoothed ? tr("%1 (raw)").arg(label) : label);
    series.raw_drawn = std::make_shared<LiveDecimation>(series.raw);
    if (smoothed) {
        series.smoothed = addGraph(x, y);
        series.smoothed->setAdaptiveSampling(true);
        series.smoothed->setPen(pen);
        series.smoothed->setName(tr("%1 (EMA %2)").arg(label).arg(smoothingWeight()));
        series.smoothed_drawn = std::make_shared<LiveDecimation>(series.smoothed);
    }
}

std::vector<LiveDecimation*> MetricPlots::decimations() {
    std::vector<LiveDecimation*> out;
    auto add = [&out](Series& series) {
        if (series.raw_drawn) out.push_back(series.raw_drawn.get());
        if (series.smoothed_drawn) out.push_back(series.smoothed_drawn.get());
    };
    for (Series* series : {&loss_, &eval_loss_, &grad_norm_, &learning_rate_, &throughput_, &mtp_loss_}) add(*series);
    for (auto& [key, series] : memory_) add(series);
    for (auto& [key, series] : deeper_mtp_) add(series);
    return out;
}

void MetricPlots::resetRun(const RunConfig& config) {
    // Under a changing batch the steps grow: the schedule says how many tokens the run reads.
    const BatchSchedule schedule(config);
    planned_steps_ = std::max<int64_t>(schedule.plannedSteps(), 1);
    planned_tokens_ = std::max(1.0, static_cast<double>(schedule.plannedTokens()));
    adaptive_ = schedule.adapts();
    seq_len_ = static_cast<double>(config.train.seq_len);
    run_series_.clear();
    // With multi-token prediction, train/loss is named for what it is beside the module's loss.
    const bool mtp = config.model.n_mtp_depth > 0;
    loss_.label = mtp ? tr("next-token loss") : tr("loss");
    loss_.raw->setName(tr("%1 (raw)").arg(loss_.label));
    loss_.smoothed->setName(tr("%1 (EMA %2)").arg(loss_.label).arg(smoothingWeight(), 0, 'g', 2));
    if (mtp) mtp_loss_.smoothed->addToLegend(legend);
    else mtp_loss_.smoothed->removeFromLegend(legend);
    for (Series* series : {&loss_, &eval_loss_, &grad_norm_, &learning_rate_, &throughput_, &mtp_loss_}) {
        series->drawn = 0;
        series->raw->data()->clear();
        if (series->smoothed) series->smoothed->data()->clear();
        invalidateDrawn(*series);
    }
    for (auto& [key, series] : memory_) removeGraph(series.raw);
    memory_.clear();
    for (auto& [key, series] : deeper_mtp_) {
        removeGraph(series.raw);
        removeGraph(series.smoothed);
    }
    deeper_mtp_.clear();
    device_colors_.clear();
    rebuildMemoryLegend();
    markers_.clear();
    marker_walls_.clear();
    for (auto& [kind, graph] : marker_legend_) removeGraph(graph);
    marker_legend_.clear();
    floor_line_->setVisible(false);
    floor_label_->setVisible(false);
    placeholder_->setVisible(true);
    hideCrosshair();
    setFollowing(true);
    layout_->resetRanges(config);
    followRun();
    replot_->request();
}

void MetricPlots::drawNewSamples(Series& series) {
    const std::vector<SeriesSample>& samples = series.data->samples();
    for (; series.drawn < samples.size(); ++series.drawn) {
        const SeriesSample& sample = samples[series.drawn];
        const double x = xOf(sample);
        // A point before the end lands inside the sorted data: the drawn pyramids read it all again.
        if (!series.raw->data()->isEmpty() && x < (series.raw->data()->constEnd() - 1)->key) invalidateDrawn(series);
        series.raw->addData(x, sample.value);
        if (series.smoothed) series.smoothed->addData(x, sample.smoothed);
    }
}

MetricPlots::Series& MetricPlots::memorySeries(const std::string& key) {
    auto found = memory_.find(key);
    if (found != memory_.end()) return found->second;
    std::string device;
    const MemoryKind* kind = memoryKindOf(key, &device);
    auto color = device_colors_.find(device);
    if (color == device_colors_.end()) {
        const size_t index = device_colors_.size() % std::size(kDeviceColors);
        color = device_colors_.emplace(device, kDeviceColors[index]).first;
    }
    Series& series = memory_[key];
    initSeries(series, run_series_.seriesOfKey(key), xAxisOf(memory_rect_), memory_rect_->axis(QCPAxis::atLeft),
               QStringLiteral("%1 %2").arg(QString::fromStdString(device), QLatin1String(kind->title)), QString(),
               ValueFormat::Bytes, QPen(color->second, kind->width, kind->style));
    series.group = QString::fromStdString(device);
    rebuildMemoryLegend();
    return series;
}

MetricPlots::Series& MetricPlots::deeperMtpSeries(const std::string& key) {
    auto found = deeper_mtp_.find(key);
    if (found != deeper_mtp_.end()) return found->second;
    const int depth = std::stoi(key.substr(key.rfind('/') + 1));
    // Each depth a lighter shade of the first module's colour.
    const QColor color = kMtpColor.lighter(100 + 35 * (depth - 1));
    Series& series = deeper_mtp_[key];
    initSeries(series, run_series_.seriesOfKey(key), xAxisOf(loss_rect_), loss_rect_->axis(QCPAxis::atLeft),
               tr("MTP loss, depth %1").arg(depth), tr("nats/token"), ValueFormat::Loss, QPen(color, 1.4));
    QColor faint = color;
    faint.setAlpha(60);
    series.raw->setPen(QPen(faint, 1.0));
    series.smoothed->addToLegend(legend);
    return series;
}

QCPGraph* MetricPlots::deeperMtpLossGraph(const std::string& key) const {
    const auto found = deeper_mtp_.find(key);
    return found == deeper_mtp_.end() ? nullptr : found->second.smoothed;
}

void MetricPlots::rebuildMemoryLegend() {
    for (QCPGraph* entry : memory_legend_entries_) removeGraph(entry);
    memory_legend_entries_.clear();
    // A fresh legend each time: one that lost items refills its holes out of order.
    if (memory_legend_) memory_rect_->insetLayout()->remove(memory_legend_);
    // Memory curves come and go with devices: their legend lies flat along the row's bottom,
    // where curves that start at zero and plateau leave room.
    memory_legend_ = new QCPLegend;
    memory_rect_->insetLayout()->addElement(memory_legend_, Qt::AlignBottom | Qt::AlignRight);
    memory_legend_->setLayer(QStringLiteral("legend"));
    memory_legend_->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    memory_legend_->setWrap(0);
    MetricPlotLayout::styleLegend(memory_legend_, layout_->smallFont());
    memory_legend_->setVisible(!device_colors_.empty());
    auto addEntry = [this](const QPen& pen, const QString& name) {
        QCPGraph* entry = addGraph(xAxisOf(memory_rect_), memory_rect_->axis(QCPAxis::atLeft));
        entry->setPen(pen);
        entry->setName(name);
        entry->addToLegend(memory_legend_);
        memory_legend_entries_.push_back(entry);
    };
    for (const auto& [device, color] : device_colors_) addEntry(QPen(color, 2.5), QString::fromStdString(device));
    for (const MemoryKind& kind : kMemoryKinds) {
        const bool present = std::any_of(memory_.begin(), memory_.end(), [&kind](const auto& entry) {
            const std::string& key = entry.first;
            const std::string suffix = std::string("/") + kind.suffix;
            return key.rfind("mem/", 0) == 0 && key.size() > suffix.size() &&
                   key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
        });
        if (present) addEntry(QPen(QColor(90, 90, 90), kind.width, kind.style), QLatin1String(kind.title));
    }
    for (const MemoryKind& kind : kIoKinds)
        if (memory_.count(kind.suffix)) addEntry(QPen(QColor(90, 90, 90), kind.width, kind.style), QLatin1String(kind.title));
}

QString MetricPlots::memoryLineAt(const std::string& device, double x) const {
    QStringList parts;
    const bool io = device == kIoGroup;
    for (const MemoryKind& kind : io ? std::span<const MemoryKind>(kIoKinds) : std::span<const MemoryKind>(kMemoryKinds)) {
        const auto found = memory_.find(io ? std::string(kind.suffix) : metric::memoryKeyOf(device, kind.suffix));
        QCPGraphData nearest;
        if (found != memory_.end() && nearestPoint(found->second.raw, x, &nearest))
            parts << QStringLiteral("%1 %2").arg(QLatin1String(kind.title), formatBytes(nearest.value));
    }
    if (parts.isEmpty()) return QString();
    return QStringLiteral("%1  %2").arg(QString::fromStdString(device), parts.join(QStringLiteral(" · ")));
}

void MetricPlots::addPoints(const QVector<MetricPoint>& points) {
    const SeriesUpdate update = run_series_.addPoints(points);
    if (update.entropy_floor) showEntropyFloor(run_series_.entropyFloor());
    if (!update.advanced) return;
    for (Series* series : {&loss_, &eval_loss_, &grad_norm_, &learning_rate_, &throughput_, &mtp_loss_}) drawNewSamples(*series);
    // In the order of their first points: a new device takes the next colour.
    for (const std::string& key : run_series_.memoryKeys()) drawNewSamples(memorySeries(key));
    for (const std::string& key : run_series_.deeperMtpKeys()) drawNewSamples(deeperMtpSeries(key));
    // A marker that came before its step's points learns its wall time now.
    rebuildMarkers();
    placeholder_->setVisible(loss_.data->samples().empty());
    replot_->request();
}

void MetricPlots::showEntropyFloor(double floor) {
    // The lowest reachable loss of a synthetic language: a dashed line across the loss row.
    floor_line_->point1->setCoords(0.0, floor);
    floor_line_->point2->setCoords(1.0, floor);
    floor_line_->setVisible(true);
    floor_label_->setText(tr("entropy floor %1").arg(floor, 0, 'f', 3));
    floor_label_->setVisible(true);
}

bool MetricPlots::addEvent(const RunEvent& event) {
    const QString kind = QString::fromStdString(event.kind);
    if (!isMarkerKind(kind)) return false;
    addEventMarker(event.step, kind, QString::fromStdString(event.message), event.wall_time);
    return true;
}

void MetricPlots::addEventMarker(int64_t step, const QString& kind, const QString& text, double wall_time) {
    EventMarker marker{step, 0.0, kind, text};
    marker.x = markerX(marker, wall_time);
    markers_.push_back(marker);
    marker_walls_.push_back(wall_time);
    showMarkerLegend(kind);
    replot_->request();
}

double MetricPlots::markerX(const EventMarker& marker, double wall) const {
    return run_series_.positions().markerX(marker.step, wall);
}

void MetricPlots::showMarkerLegend(const QString& kind) {
    if (marker_legend_.count(kind)) return;
    // An empty graph only lends the legend its pen and name; the marks draw themselves.
    QCPGraph* entry = addGraph(xAxisOf(loss_rect_), loss_rect_->axis(QCPAxis::atLeft));
    entry->setPen(QPen(markerColor(kind), 1.5, Qt::DashLine));
    entry->setName(markerTitle(kind));
    entry->addToLegend(legend);
    marker_legend_[kind] = entry;
}

void MetricPlots::rebuildGraphs(Series& series) {
    QVector<QCPGraphData> raw;
    QVector<QCPGraphData> smoothed;
    const std::vector<SeriesSample>& samples = series.data->samples();
    raw.reserve(static_cast<qsizetype>(samples.size()));
    if (series.smoothed) smoothed.reserve(static_cast<qsizetype>(samples.size()));
    for (const SeriesSample& sample : samples) {
        const double x = xOf(sample);
        raw.push_back(QCPGraphData(x, sample.value));
        if (series.smoothed) smoothed.push_back(QCPGraphData(x, sample.smoothed));
    }
    series.raw->data()->set(raw, false);
    if (series.smoothed) series.smoothed->data()->set(smoothed, false);
    series.drawn = samples.size();
    invalidateDrawn(series);
}

void MetricPlots::invalidateDrawn(Series& series) {
    series.raw_drawn->invalidate();
    if (series.smoothed_drawn) series.smoothed_drawn->invalidate();
}

void MetricPlots::rebuildMarkers() {
    for (qsizetype i = 0; i < markers_.size(); ++i) markers_[i].x = markerX(markers_[i], marker_walls_[i]);
}

void MetricPlots::setXAxis(XAxis axis) {
    if (axis == xAxis()) return;
    run_series_.setAxis(axis);
    for (Series* series : {&loss_, &eval_loss_, &grad_norm_, &learning_rate_, &throughput_, &mtp_loss_}) rebuildGraphs(*series);
    for (auto& [key, series] : memory_) rebuildGraphs(series);
    for (auto& [key, series] : deeper_mtp_) rebuildGraphs(series);
    rebuildMarkers();
    layout_->applyXAxis(axis);
    hideCrosshair();
    // The old range means nothing on the new axis.
    setFollowing(true);
    followRun();
    replot_->requestSoon();
}

void MetricPlots::setLogY(Plot plot, bool logarithmic) {
    if (!layout_->setLogY(plot, logarithmic)) return;
    // Switching scale is asking to see the curve again: fit it even when not following.
    fitRow(plot, xAxisOf(loss_rect_)->range());
    replot_->requestSoon();
}

bool MetricPlots::logY(Plot plot) const { return layout_->logY(plot); }

void MetricPlots::setIgnoreOutliers(bool ignore) {
    if (ignore == ignore_outliers_) return;
    ignore_outliers_ = ignore;
    if (following_) followRun();
    replot_->requestSoon();
}

void MetricPlots::setSmoothingWeight(double weight) {
    const EmaSmoother probe(weight);  // clamps into [0, 1) as every smoother does
    if (probe.weight() == smoothingWeight()) return;
    // The full series is re-smoothed, never a downsampled one.
    run_series_.setSmoothingWeight(probe.weight());
    std::vector<Series*> smoothed{&loss_, &grad_norm_, &mtp_loss_};
    for (auto& [key, series] : deeper_mtp_) smoothed.push_back(&series);
    for (Series* series : smoothed) {
        rebuildGraphs(*series);
        series->smoothed->setName(tr("%1 (EMA %2)").arg(series->label).arg(smoothingWeight(), 0, 'g', 2));
    }
    replot_->requestSoon();
}

void MetricPlots::followLatest() {
    setFollowing(true);
    followRun();
    replot();
}

void MetricPlots::setFollowing(bool following) {
    if (following == following_) return;
    following_ = following;
    emit followingChanged(following_);
}

QCPGraph* MetricPlots::memoryGraph(const QString& key) const {
    const auto found = memory_.find(key.toStdString());
    return found == memory_.end() ? nullptr : found->second.raw;
}

void MetricPlots::flushReplot() { replot_->flush(); }

void MetricPlots::replotPendingData() {
    if (following_) followRun();
    // The crosshair's labels read the newest points too.
    if (crosshairVisible()) crosshair_->place(crosshair_->x());
    replot();
}

void MetricPlots::fitValueAxis(QCPAxis* axis, const std::vector<const QCPGraph*>& graphs, const QCPRange& keys,
                               bool robust, bool from_zero, double keep_in_view) {
    const bool logarithmic = axis->scaleType() == QCPAxis::stLogarithmic;
    ValueExtent extent;
    bool found = false;
    for (const QCPGraph* graph : graphs) {
        ValueExtent one;
        // Only the first graph (the raw series) is trimmed; later ones (eval points) are few
        // and each of them counts.
        const bool trim = robust && graph == graphs.front();
        if (!robustExtent(visibleValues(graph, keys), trim ? kLowerQuantile : 0.0, trim ? kUpperQuantile : 1.0,
                          kPadding, logarithmic, &one))
            continue;
        extent = found ? ValueExtent{std::min(extent.lower, one.lower), std::max(extent.upper, one.upper)} : one;
        found = true;
    }
    if (!found) return;
    if (std::isfinite(keep_in_view) && (!logarithmic || keep_in_view > 0) && keep_in_view < extent.lower) {
        // Keep the floor in view: the distance to it is what the user watches.
        extent.lower = logarithmic ? keep_in_view / std::pow(extent.upper / keep_in_view, 0.05)
                                   : keep_in_view - 0.05 * (extent.upper - keep_in_view);
    }
    if (from_zero && !logarithmic) extent.lower = std::min(0.0, extent.lower);
    axis->setRange(extent.lower, extent.upper);
}

void MetricPlots::followRun() {
    const int64_t last_step = run_series_.lastStep();
    const double last_tokens = run_series_.lastTokens();
    // Token positions of the newest step (train/global_batch x seq_len).
    const double step_tokens = run_series_.stepSequences() * seq_len_;
    double upper = 1.0;
    switch (xAxis()) {
    case XAxis::Step:
        upper = std::max(static_cast<double>(planned_steps_), static_cast<double>(last_step));
        // An adaptive batch's end in steps: the tokens left at the current batch (the plan at
        // the first batch is only an upper bound).
        if (adaptive_ && step_tokens > 0 && last_step > 0)
            upper = std::min(upper, static_cast<double>(last_step) +
                                        std::ceil(std::max(0.0, planned_tokens_ - last_tokens) / step_tokens));
        break;
    case XAxis::Tokens: upper = std::max(planned_tokens_, last_tokens); break;
    // The end of a run in time is unknown: keep the newest point near the right edge.
    case XAxis::WallTime: upper = std::max(1.0, run_series_.lastWall() * 1.05); break;
    }
    // A sliver of room on the right keeps the newest point off the frame.
    const QCPRange keys(0.0, upper + std::max(xAxis() == XAxis::Step ? 0.5 : 0.0, 0.01 * upper));
    xAxisOf(loss_rect_)->setRange(keys);

    for (Plot plot : {Plot::Loss, Plot::GradNorm, Plot::Rates, Plot::Memory}) fitRow(plot, keys);
    const double floor = entropyFloor();
    if (std::isfinite(floor)) floor_label_->position->setCoords(keys.lower + 0.01 * keys.size(), floor);
}

void MetricPlots::fitRow(Plot plot, const QCPRange& keys) {
    switch (plot) {
    case Plot::Loss: {
        std::vector<const QCPGraph*> graphs{loss_.raw, eval_loss_.raw, mtp_loss_.raw};
        for (const auto& [key, series] : deeper_mtp_) graphs.push_back(series.raw);
        fitValueAxis(loss_rect_->axis(QCPAxis::atLeft), graphs, keys, ignore_outliers_, false, entropyFloor());
        break;
    }
    case Plot::GradNorm:
        fitValueAxis(grad_rect_->axis(QCPAxis::atLeft), {grad_norm_.raw}, keys, ignore_outliers_, false);
        break;
    case Plot::Rates:
        // The learning rate follows a schedule, never an outlier: its whole extent counts.
        fitValueAxis(rate_rect_->axis(QCPAxis::atLeft), {learning_rate_.raw}, keys, false, true);
        fitValueAxis(rate_rect_->axis(QCPAxis::atRight), {throughput_.raw}, keys, ignore_outliers_, true);
        break;
    case Plot::Memory: {
        // Memory peaks are the point of the memory row: never trimmed.
        std::vector<const QCPGraph*> graphs;
        for (auto& [key, series] : memory_) graphs.push_back(series.raw);
        QCPAxis* y = memory_rect_->axis(QCPAxis::atLeft);
        fitValueAxis(y, graphs, keys, false, y->scaleType() == QCPAxis::stLinear);
        break;
    }
    }
}

QString MetricPlots::formatValue(const Series& series, double value) const {
    if (!std::isfinite(value)) return missingValue();
    switch (series.format) {
    case ValueFormat::Loss: return QString::number(value, 'f', 4);
    case ValueFormat::Plain: return QString::number(value, 'g', 4);
    case ValueFormat::Rate: return formatSi(value);
    case ValueFormat::Bytes: return formatBytes(value);
    }
    return QString::number(value);
}

QString MetricPlots::seriesLineAt(const Series& series, double x) const {
    QCPGraphData nearest;
    if (!nearestPoint(series.raw, x, &nearest)) return QString();
    QString line = QStringLiteral("%1  %2").arg(series.label, formatValue(series, nearest.value));
    if (series.smoothed) {
        QCPGraphData smoothed;
        if (nearestPoint(series.smoothed, x, &smoothed))
            line += tr("  (EMA %1)").arg(formatValue(series, smoothed.value));
    }
    if (!series.unit.isEmpty()) line += QLatin1Char(' ') + series.unit;
    return line;
}

QString MetricPlots::positionLineAt(double x) const {
    // The loss point nearest to the cursor names the step, its tokens and its time.
    const std::vector<SeriesSample>& samples = loss_.data->samples();
    const SeriesSample* best = nullptr;
    if (!samples.empty()) {
        // Samples arrive in step order, so x grows along them on every axis.
        auto it = std::lower_bound(samples.begin(), samples.end(), x,
                                   [this](const SeriesSample& sample, double key) { return xOf(sample) < key; });
        if (it == samples.end()) --it;
        if (it != samples.begin() && std::abs(xOf(*(it - 1)) - x) <= std::abs(xOf(*it) - x)) --it;
        best = &*it;
    }
    if (!best) {
        switch (xAxis()) {
        case XAxis::Step: return tr("step %1").arg(std::llround(x));
        case XAxis::Tokens: return tr("%1 tokens").arg(formatSi(x));
        case XAxis::WallTime: return formatDuration(x);
        }
    }
    return tr("step %1 · %2 tokens · %3").arg(best->step).arg(formatSi(best->tokens), formatDuration(best->wall));
}

QStringList MetricPlots::crosshairLines(const QCPAxisRect* rect, double x) const {
    QStringList lines;
    if (rect == loss_rect_) {
        lines << positionLineAt(x);
        for (const Series* series : {&loss_, &eval_loss_, &mtp_loss_})
            if (!series->data->samples().empty()) lines << seriesLineAt(*series, x);
        for (const auto& [key, series] : deeper_mtp_) lines << seriesLineAt(series, x);
        const double cursor_px = xAxisOf(loss_rect_)->coordToPixel(x);
        for (const EventMarker& marker : markers_) {
            if (std::abs(xAxisOf(loss_rect_)->coordToPixel(marker.x) - cursor_px) <= kMarkerHoverPx)
                lines << tr("%1 at step %2: %3").arg(markerTitle(marker.kind)).arg(marker.step).arg(marker.text.left(80));
        }
    } else if (rect == grad_rect_) {
        lines << seriesLineAt(grad_norm_, x);
    } else if (rect == rate_rect_) {
        lines << seriesLineAt(learning_rate_, x) << seriesLineAt(throughput_, x);
    } else {
        for (const auto& [device, color] : device_colors_) lines << memoryLineAt(device, x);
    }
    return lines;
}

void MetricPlots::mouseMoveEvent(QMouseEvent* event) {
    QCustomPlot::mouseMoveEvent(event);
    const QPointF pos = event->position();
    QCPAxisRect* under = axisRectAt(pos);
    if (!under) {
        if (crosshairVisible()) hideCrosshair();
        QToolTip::hideText();
        return;
    }
    showCrosshairAt(xAxisOf(under)->pixelToCoord(pos.x()));
    // A tooltip names the marks under the cursor: their full text can be long.
    QStringList near;
    for (const EventMarker& marker : markers_)
        if (std::abs(xAxisOf(under)->coordToPixel(marker.x) - pos.x()) <= kMarkerHoverPx)
            near << tr("%1 at step %2\n%3").arg(markerTitle(marker.kind)).arg(marker.step).arg(marker.text);
    if (near.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(event->globalPosition().toPoint(), near.join(QStringLiteral("\n\n")), this);
}

void MetricPlots::mouseDoubleClickEvent(QMouseEvent* event) {
    QCustomPlot::mouseDoubleClickEvent(event);
    followLatest();
}

void MetricPlots::leaveEvent(QEvent* event) {
    QCustomPlot::leaveEvent(event);
    hideCrosshair();
}

bool MetricPlots::exportPlot(const QString& path, int width, int height) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("png") && suffix != QLatin1String("pdf")) return false;
    // The export shows the curves, not where the mouse happened to be.
    const double crosshair_x = crosshair_->x();
    hideCrosshair();
    flushReplot();
    // A widget never laid out (a test's, a hidden tab's) still exports at a readable size.
    const QSize size = width > 0 && height > 0 ? QSize(width, height) : this->size().expandedTo(minimumSize());
    const bool saved = suffix == QLatin1String("png") ? savePng(path, size.width(), size.height())
                                                      : savePdf(path, size.width(), size.height());
    if (std::isfinite(crosshair_x)) showCrosshairAt(crosshair_x);
    return saved;
}

}  // namespace trainbench::gui
