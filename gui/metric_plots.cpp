// MetricPlots: the live plots of one run: loss (raw and smoothed) above, learning rate and tokens/s below.
#include "metric_plots.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace trainbench::gui {

namespace {

const QColor kLossColor(31, 119, 180);
const QColor kRateColor(230, 120, 20);
const QColor kThroughputColor(44, 160, 44);
const QColor kEvalColor(214, 39, 40);

// Optimizer steps are whole numbers: ticks at 1, 2 or 5 × 10^k and never finer than one step.
class StepTicker : public QCPAxisTicker {
protected:
    double getTickStep(const QCPRange& range) override {
        const double exact = range.size() / (mTickCount + 1e-10);
        if (exact <= 1.0) return 1.0;
        const double magnitude = std::pow(10.0, std::floor(std::log10(exact)));
        for (double mantissa : {1.0, 2.0, 5.0})
            if (mantissa * magnitude >= exact) return mantissa * magnitude;
        return 10.0 * magnitude;
    }
};

void styleAxis(QCPAxis* axis, const QFont& tick_font, const QFont& label_font) {
    axis->setTickLabelFont(tick_font);
    axis->setLabelFont(label_font);
    axis->grid()->setPen(QPen(QColor(225, 225, 225), 0, Qt::SolidLine));
    axis->grid()->setSubGridVisible(false);
}

void styleLegend(QCPLegend* legend, const QFont& font) {
    legend->setFont(font);
    legend->setBrush(QColor(255, 255, 255, 215));
    legend->setBorderPen(QPen(QColor(190, 190, 190)));
    legend->setRowSpacing(0);
    legend->setVisible(true);
}

// The value extent of a graph over the x range, padded so lines never touch the frame.
// `from_zero` anchors rates at zero: a throughput dip must not look like a collapse.
bool paddedValueRange(const QCPGraph* graph, const QCPRange& keys, bool from_zero, QCPRange* out) {
    bool found = false;
    QCPRange range = graph->getValueRange(found, QCP::sdBoth, keys);
    if (!found) return false;
    if (from_zero) range.lower = std::min(range.lower, 0.0);
    double span = range.size();
    if (span <= 0.0) span = std::max(std::abs(range.upper), 1e-12);
    range.lower -= from_zero && range.lower >= 0.0 ? 0.0 : 0.06 * span;
    range.upper += 0.08 * span;
    *out = range;
    return true;
}

}  // namespace

MetricPlots::MetricPlots(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("metricPlots"));
    setMinimumSize(480, 360);
    setNoAntialiasingOnDrag(true);
    setAutoAddPlottableToLegend(false);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);

    QFont tick_font = font();
    QFont label_font = font();
    label_font.setPointSizeF(tick_font.pointSizeF() + 1.0);

    loss_rect_ = axisRect();
    rate_rect_ = new QCPAxisRect(this);
    plotLayout()->addElement(1, 0, rate_rect_);
    plotLayout()->setRowStretchFactor(0, 2.3);
    plotLayout()->setRowStretchFactor(1, 1.0);
    plotLayout()->setRowSpacing(4);

    // Both rects share their left and right margins so the step axes line up exactly.
    auto* margins = new QCPMarginGroup(this);
    loss_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
    rate_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);

    QSharedPointer<QCPAxisTicker> step_ticker(new StepTicker);
    for (QCPAxisRect* rect : {loss_rect_, rate_rect_}) {
        for (QCPAxis* axis : rect->axes()) styleAxis(axis, tick_font, label_font);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        x->setTicker(step_ticker);
        x->setNumberFormat(QStringLiteral("f"));
        x->setNumberPrecision(0);
    }
    loss_rect_->axis(QCPAxis::atLeft)->setLabel(tr("train loss (nats / token)"));
    rate_rect_->axis(QCPAxis::atBottom)->setLabel(tr("optimizer step"));

    QCPAxis* lr_axis = rate_rect_->axis(QCPAxis::atLeft);
    lr_axis->setLabel(tr("learning rate"));
    lr_axis->setLabelColor(kRateColor.darker(115));
    lr_axis->setTickLabelColor(kRateColor.darker(115));
    lr_axis->setNumberFormat(QStringLiteral("g"));
    lr_axis->setNumberPrecision(2);
    lr_axis->ticker()->setTickCount(3);
    QCPAxis* tps_axis = rate_rect_->axis(QCPAxis::atRight);
    tps_axis->setVisible(true);
    tps_axis->setLabel(tr("tokens / s"));
    tps_axis->setLabelColor(kThroughputColor.darker(125));
    tps_axis->setTickLabelColor(kThroughputColor.darker(125));
    tps_axis->setNumberFormat(QStringLiteral("f"));
    tps_axis->setNumberPrecision(0);
    tps_axis->ticker()->setTickCount(3);

    // Dragging or zooming either rect moves both step axes, so the rows stay comparable.
    QCPAxis* loss_x = loss_rect_->axis(QCPAxis::atBottom);
    QCPAxis* rate_x = rate_rect_->axis(QCPAxis::atBottom);
    connect(loss_x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), rate_x,
            qOverload<const QCPRange&>(&QCPAxis::setRange));
    connect(rate_x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), loss_x,
            qOverload<const QCPRange&>(&QCPAxis::setRange));

    QColor faint = kLossColor;
    faint.setAlpha(80);
    loss_raw_ = addGraph(loss_x, loss_rect_->axis(QCPAxis::atLeft));
    loss_raw_->setName(tr("loss (raw)"));
    loss_raw_->setPen(QPen(faint, 1.2));
    loss_smoothed_ = addGraph(loss_x, loss_rect_->axis(QCPAxis::atLeft));
    loss_smoothed_->setName(tr("loss (EMA %1)").arg(smoother_.weight()));
    loss_smoothed_->setPen(QPen(kLossColor, 2.2));

    eval_loss_ = addGraph(loss_x, loss_rect_->axis(QCPAxis::atLeft));
    eval_loss_->setName(tr("eval loss"));
    eval_loss_->setLineStyle(QCPGraph::lsNone);
    eval_loss_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kEvalColor, kEvalColor, 7));

    // The lowest reachable loss of a synthetic language: a dashed line the curve approaches.
    floor_line_ = new QCPItemStraightLine(this);
    floor_line_->setClipAxisRect(loss_rect_);
    for (QCPItemPosition* end : {floor_line_->point1, floor_line_->point2}) {
        end->setAxes(loss_x, loss_rect_->axis(QCPAxis::atLeft));
        end->setAxisRect(loss_rect_);
    }
    floor_line_->setPen(QPen(QColor(110, 110, 110), 1.2, Qt::DashLine));
    floor_label_ = new QCPItemText(this);
    floor_label_->setClipAxisRect(loss_rect_);
    floor_label_->position->setAxes(loss_x, loss_rect_->axis(QCPAxis::atLeft));
    floor_label_->position->setAxisRect(loss_rect_);
    floor_label_->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    floor_label_->setColor(QColor(90, 90, 90));
    floor_label_->setFont(tick_font);

    learning_rate_ = addGraph(rate_x, lr_axis);
    learning_rate_->setName(tr("learning rate"));
    learning_rate_->setPen(QPen(kRateColor, 1.8));
    throughput_ = addGraph(rate_x, tps_axis);
    throughput_->setName(tr("tokens / s"));
    throughput_->setPen(QPen(kThroughputColor, 1.5));

    styleLegend(legend, tick_font);
    loss_raw_->addToLegend(legend);
    loss_smoothed_->addToLegend(legend);
    eval_loss_->addToLegend(legend);
    loss_rect_->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);

    // The lower rect has no legend: each series owns one axis, and axis colours name them.
    placeholder_ = new QCPItemText(this);
    placeholder_->setClipAxisRect(loss_rect_);
    placeholder_->position->setType(QCPItemPosition::ptAxisRectRatio);
    placeholder_->position->setAxisRect(loss_rect_);
    placeholder_->position->setCoords(0.5, 0.5);
    placeholder_->setPositionAlignment(Qt::AlignCenter);
    placeholder_->setText(tr("Press Start to train: the loss appears here as steps complete."));
    placeholder_->setColor(QColor(130, 130, 130));
    placeholder_->setFont(label_font);

    replot_timer_.setSingleShot(true);
    replot_timer_.setInterval(kReplotIntervalMs);
    connect(&replot_timer_, &QTimer::timeout, this, &MetricPlots::replotPendingData);

    // Any manual view change stops following the run until a double click.
    connect(this, &QCustomPlot::mousePress, this, [this](QMouseEvent*) { following_ = false; });
    connect(this, &QCustomPlot::mouseWheel, this, [this](QWheelEvent*) { following_ = false; });
    connect(this, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) {
        following_ = true;
        followRun();
        replot();
    });

    resetRun(RunConfig{});
}

void MetricPlots::resetRun(const RunConfig& config) {
    planned_steps_ = std::max<int64_t>(config.train.steps, 1);
    last_step_ = 0;
    smoother_.reset();
    for (QCPGraph* graph : {loss_raw_, loss_smoothed_, eval_loss_, learning_rate_, throughput_}) graph->data()->clear();
    entropy_floor_ = qQNaN();
    floor_line_->setVisible(false);
    floor_label_->setVisible(false);
    placeholder_->setVisible(true);
    following_ = true;
    // A freshly initialised model predicts nearly uniformly: its first loss is close to ln V.
    const double uniform_loss = std::log(static_cast<double>(std::max<int64_t>(config.model.vocab_size, 2)));
    loss_rect_->axis(QCPAxis::atLeft)->setRange(0.0, 1.15 * uniform_loss);
    const double peak_lr = config.train.lr > 0.0 ? config.train.lr : 1e-3;
    rate_rect_->axis(QCPAxis::atLeft)->setRange(0.0, 1.08 * peak_lr);
    rate_rect_->axis(QCPAxis::atRight)->setRange(0.0, 1000.0);
    followRun();
    scheduleReplot();
}

void MetricPlots::addPoints(const QVector<MetricPoint>& points) {
    bool changed = false;
    for (const MetricPoint& point : points) {
        const double step = static_cast<double>(point.step);
        if (point.key == "train/loss") {
            // QCustomPlot draws NaN as a gap; an infinity would instead blow up the y range.
            const double loss = std::isfinite(point.value) ? point.value : qQNaN();
            loss_raw_->addData(step, loss);
            loss_smoothed_->addData(step, smoother_.add(loss));
        } else if (point.key == "eval/loss") {
            eval_loss_->addData(step, point.value);
        } else if (point.key == "data/entropy_floor") {
            entropy_floor_ = point.value;
            floor_line_->point1->setCoords(0.0, point.value);
            floor_line_->point2->setCoords(1.0, point.value);
            floor_line_->setVisible(true);
            floor_label_->setText(tr("entropy floor %1").arg(point.value, 0, 'f', 3));
            floor_label_->setVisible(true);
            continue;  // a property of the data, not a step of the run
        } else if (point.key == "train/lr") {
            learning_rate_->addData(step, point.value);
        } else if (point.key == "perf/tokens_per_s") {
            throughput_->addData(step, point.value);
        } else {
            continue;
        }
        last_step_ = std::max(last_step_, step);
        changed = true;
    }
    if (!changed) return;
    placeholder_->setVisible(false);
    scheduleReplot();
}

void MetricPlots::flushReplot() {
    replot_timer_.stop();
    replotPendingData();
}

void MetricPlots::scheduleReplot() {
    // A burst of batches arms the timer once; later batches ride on the same redraw.
    if (!replot_timer_.isActive()) replot_timer_.start();
}

void MetricPlots::replotPendingData() {
    if (following_) followRun();
    replot();
}

void MetricPlots::followRun() {
    const double upper = std::max(static_cast<double>(planned_steps_), last_step_);
    // A sliver of room on the right keeps the newest point off the frame.
    const QCPRange keys(0.0, upper + std::max(0.5, 0.01 * upper));
    loss_rect_->axis(QCPAxis::atBottom)->setRange(keys);

    QCPRange values;
    // The smoothed curve lies inside the raw extent, so the raw graph alone sets the loss range.
    if (paddedValueRange(loss_raw_, keys, false, &values)) {
        // Keep the floor in view: the distance to it is what the user watches.
        if (std::isfinite(entropy_floor_) && entropy_floor_ < values.lower) {
            const double span = values.upper - entropy_floor_;
            values = QCPRange(entropy_floor_ - 0.05 * span, values.upper);
        }
        loss_rect_->axis(QCPAxis::atLeft)->setRange(values);
    }
    if (std::isfinite(entropy_floor_)) floor_label_->position->setCoords(keys.lower + 0.01 * keys.size(), entropy_floor_);
    if (paddedValueRange(learning_rate_, keys, true, &values))
        rate_rect_->axis(QCPAxis::atLeft)->setRange(values);
    if (paddedValueRange(throughput_, keys, true, &values))
        rate_rect_->axis(QCPAxis::atRight)->setRange(values);
}

}  // namespace trainbench::gui
