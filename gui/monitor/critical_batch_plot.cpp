// CriticalBatchPlot: a log-scaled QCustomPlot of the noise scale's critical batch and B.
#include "monitor/critical_batch_plot.h"

#include <algorithm>
#include <cmath>
#include "trainbench/metric_keys.h"

namespace trainbench::gui {

namespace {

const QColor kCritical(0x6a, 0x3d, 0x9a);
const QColor kGlobalBatch(0x33, 0x33, 0x33);

// Ticks at 1, 2 and 5 times the powers of ten: QCustomPlot's log ticker falls back to linear
// steps (crowded at the top of a log axis) when the range spans under 1.6 decades, as a
// critical batch often does.
class OneTwoFiveTicker : public QCPAxisTicker {
protected:
    QVector<double> createTickVector(double, const QCPRange& range) override {
        QVector<double> ticks;
        if (range.lower <= 0 || range.upper <= range.lower) return ticks;
        for (double decade = std::pow(10.0, std::floor(std::log10(range.lower))); decade <= range.upper; decade *= 10.0)
            for (double mantissa : {1.0, 2.0, 5.0})
                if (decade * mantissa >= range.lower && decade * mantissa <= range.upper) ticks.push_back(decade * mantissa);
        return ticks;
    }
    QVector<double> createSubTickVector(int, const QVector<double>&) override { return {}; }
};

}  // namespace

CriticalBatchPlot::CriticalBatchPlot(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("criticalBatchPlot"));
    setMinimumHeight(130);
    QFont small_font = font();
    small_font.setPointSizeF(std::max(6.5, small_font.pointSizeF() - 1.0));
    title_ = new QCPTextElement(this, QString(), small_font);
    plotLayout()->insertRow(0);
    plotLayout()->addElement(0, 0, title_);
    plotLayout()->setRowSpacing(0);

    QCPAxis* x = xAxis;
    QCPAxis* y = yAxis;
    x->setLabel(tr("optimizer step"));
    y->setLabel(tr("sequences"));
    y->setScaleType(QCPAxis::stLogarithmic);
    y->setTicker(QSharedPointer<QCPAxisTicker>(new OneTwoFiveTicker));
    y->setNumberFormat(QStringLiteral("g"));
    y->setNumberPrecision(4);
    for (QCPAxis* axis : {x, y}) {
        axis->setTickLabelFont(small_font);
        axis->setLabelFont(small_font);
        axis->grid()->setPen(QPen(QColor(225, 225, 225), 0, Qt::SolidLine));
    }

    band_low_ = addGraph(x, y);
    band_high_ = addGraph(x, y);
    for (QCPGraph* band : {band_low_, band_high_}) band->setPen(Qt::NoPen);
    QColor fill = kCritical;
    fill.setAlpha(45);
    band_high_->setBrush(fill);
    band_high_->setChannelFillGraph(band_low_);
    critical_ = addGraph(x, y);
    critical_->setPen(QPen(kCritical, 1.8));
    critical_->setName(tr("critical batch (± 1 error)"));
    global_batch_ = addGraph(x, y);
    global_batch_->setPen(QPen(kGlobalBatch, 1.4, Qt::DashLine));
    global_batch_->setLineStyle(QCPGraph::lsStepLeft);
    global_batch_->setName(tr("global batch B"));
    legend->setVisible(true);
    legend->setFont(small_font);
    legend->setBrush(QColor(255, 255, 255, 215));
    legend->removeItem(legend->itemWithPlottable(band_low_));
    legend->removeItem(legend->itemWithPlottable(band_high_));
    // Top left: the curve starts low on the left and grows as the loss approaches its floor.
    axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);

    replot_ = new CoalescedReplot(this, [this] {
        rebuild();
        replot();
    });
    reset();
}

void CriticalBatchPlot::reset() {
    for (QCPGraph* graph : {critical_, band_low_, band_high_, global_batch_}) graph->data()->clear();
    errors_.clear();
    rebuild();
    replot_->request();
}

void CriticalBatchPlot::addPoints(const QVector<MetricPoint>& points) {
    bool changed = false;
    const bool had_data = hasData();
    for (const MetricPoint& p : points) {
        const double step = static_cast<double>(p.step);
        if (p.key == metric::kCriticalBatchSequences) {
            if (!(p.value > 0) || !std::isfinite(p.value)) continue;  // no estimate yet: nothing on a log axis
            critical_->addData(step, p.value);
            const double error = errors_.value(p.step, std::nan(""));
            errors_.remove(p.step);
            if (std::isfinite(error)) {
                band_low_->addData(step, std::max(p.value * (1.0 - error), p.value * 0.05));
                band_high_->addData(step, p.value * (1.0 + error));
            }
            changed = true;
        } else if (p.key == metric::kCriticalBatchRelativeError) {
            errors_[p.step] = p.value;  // its estimate may have come first: the loop below pairs them
        } else if (p.key == metric::kGlobalBatch) {
            global_batch_->addData(step, p.value);
            changed = true;
        }
    }
    // A relative error that arrived after its estimate: the band catches up.
    for (auto it = errors_.begin(); it != errors_.end();) {
        auto found = critical_->data()->findBegin(double(it.key()), false);
        if (found != critical_->data()->constEnd() && found->key == double(it.key())) {
            band_low_->addData(found->key, std::max(found->value * (1.0 - it.value()), found->value * 0.05));
            band_high_->addData(found->key, found->value * (1.0 + it.value()));
            it = errors_.erase(it);
            changed = true;
        } else {
            ++it;
        }
    }
    if (!had_data && hasData()) emit dataStarted();
    if (changed) replot_->request();
}

QString CriticalBatchPlot::summary() const {
    if (!hasData()) return tr("Critical batch: no estimate (a window needs two micro-batches or more)");
    const auto last = critical_->data()->constEnd() - 1;
    QString text = tr("Critical batch ~%1 sequences at step %2").arg(last->value, 0, 'f', last->value < 10 ? 1 : 0).arg(last->key);
    auto band = band_high_->data()->findBegin(last->key, false);
    if (band != band_high_->data()->constEnd() && band->key == last->key)
        text += tr(" (± %1 %)").arg(std::lround(100.0 * (band->value / last->value - 1.0)));
    if (global_batch_->dataCount() > 0) text += tr(" · B %1").arg((global_batch_->data()->constEnd() - 1)->value);
    return text;
}

void CriticalBatchPlot::rebuild() {
    title_->setText(summary());
    bool found = false;
    QCPRange values = critical_->data()->valueRange(found);
    bool found_b = false;
    const QCPRange b = global_batch_->data()->valueRange(found_b);
    bool found_band = false, found_low = false;
    const QCPRange high = band_high_->data()->valueRange(found_band);
    const QCPRange band_low = band_low_->data()->valueRange(found_low);
    if (!found && !found_b) {
        yAxis->setRange(1, 100);
        xAxis->setRange(0, 10);
        return;
    }
    double low = found ? values.lower : b.lower, top = found ? values.upper : b.upper;
    if (found_b) low = std::min(low, b.lower), top = std::max(top, b.upper);
    if (found_band) top = std::max(top, high.upper);
    if (found_low) low = std::min(low, band_low.lower);
    yAxis->setRange(std::max(low / 1.5, 1e-3), top * 1.5);
    bool found_keys = false;
    const QCPRange keys = (found ? critical_ : global_batch_)->data()->keyRange(found_keys);
    xAxis->setRange(0, std::max(keys.upper, 1.0) * 1.02);
}

void CriticalBatchPlot::flushReplot() { replot_->flush(); }

}  // namespace trainbench::gui
