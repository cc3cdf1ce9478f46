// MetricPlotLayout: the rows of the live plots (loss, gradient norm, learning rate with tokens/s, memory) and their axes.
#include "monitor/metric_plot_layout.h"

#include <algorithm>
#include <cmath>

#include "plotting/plot_tickers.h"

namespace trainbench::gui {

namespace {

const QColor kRateColor(230, 120, 20);
const QColor kThroughputColor(44, 160, 44);

void styleAxis(QCPAxis* axis, const QFont& tick_font, const QFont& label_font) {
    axis->setTickLabelFont(tick_font);
    axis->setLabelFont(label_font);
    axis->grid()->setPen(QPen(QColor(225, 225, 225), 0, Qt::SolidLine));
    axis->grid()->setSubGridVisible(false);
}

}  // namespace

void MetricPlotLayout::styleLegend(QCPLegend* legend, const QFont& font) {
    legend->setFont(font);
    legend->setBrush(QColor(255, 255, 255, 215));
    legend->setBorderPen(QPen(QColor(190, 190, 190)));
    legend->setRowSpacing(0);
    legend->setColumnSpacing(6);
    legend->setIconSize(18, 8);
    legend->setVisible(true);
}

MetricPlotLayout::MetricPlotLayout(QCustomPlot* plot) {
    const QFont tick_font = plot->font();
    const QFont label_font = plot->font();
    small_font_ = plot->font();
    small_font_.setPointSizeF(std::max(6.5, tick_font.pointSizeF() - 1.0));

    QCPAxisRect* loss_rect = plot->axisRect();
    auto* grad_rect = new QCPAxisRect(plot);
    auto* rate_rect = new QCPAxisRect(plot);
    auto* memory_rect = new QCPAxisRect(plot);
    rects_ = {loss_rect, grad_rect, rate_rect, memory_rect};
    plot->plotLayout()->addElement(1, 0, grad_rect);
    plot->plotLayout()->addElement(2, 0, rate_rect);
    plot->plotLayout()->addElement(3, 0, memory_rect);
    plot->plotLayout()->setRowStretchFactor(0, 2.0);
    plot->plotLayout()->setRowStretchFactor(1, 1.0);
    plot->plotLayout()->setRowStretchFactor(2, 1.0);
    plot->plotLayout()->setRowStretchFactor(3, 1.0);
    plot->plotLayout()->setRowSpacing(2);

    // Every rect shares its left and right margins so the x axes line up exactly.
    auto* margins = new QCPMarginGroup(plot);
    for (QCPAxisRect* rect : rects_) {
        rect->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
        for (QCPAxis* axis : rect->axes()) styleAxis(axis, tick_font, label_font);
        // The right axis is shown everywhere (labels only where a series owns it) so every
        // row's plot area has the same width as the throughput row's.
        rect->axis(QCPAxis::atRight)->setVisible(true);
        rect->axis(QCPAxis::atRight)->setTickLabels(false);
        rect->axis(QCPAxis::atRight)->setTicks(false);
        // The rows share one x axis: only the bottom row labels it, the crosshair reads it.
        // Their top and bottom margins are fixed and thin, so the curves get the height.
        if (rect != memory_rect) {
            xAxisOf(rect)->setTickLabels(false);
            rect->setAutoMargins(QCP::msLeft | QCP::msRight);
            rect->setMargins(QMargins(0, rect == loss_rect ? 8 : 4, 0, 4));
        } else {
            rect->setAutoMargins(QCP::msLeft | QCP::msRight | QCP::msBottom);
            rect->setMargins(QMargins(0, 4, 0, 0));
        }
    }

    yAxisOf(loss_rect)->setLabel(QObject::tr("loss (nats/token)"));
    yAxisOf(grad_rect)->setLabel(QObject::tr("grad norm"));
    yAxisOf(grad_rect)->ticker()->setTickCount(3);
    yAxisOf(memory_rect)->setLabel(QObject::tr("memory"));
    yAxisOf(memory_rect)->setTicker(QSharedPointer<QCPAxisTicker>(new ByteTicker));
    yAxisOf(memory_rect)->ticker()->setTickCount(4);

    QCPAxis* lr_axis = learningRateAxis();
    lr_axis->setLabel(QObject::tr("learning rate"));
    lr_axis->setLabelColor(kRateColor.darker(115));
    lr_axis->setTickLabelColor(kRateColor.darker(115));
    lr_axis->setNumberFormat(QStringLiteral("g"));
    lr_axis->setNumberPrecision(2);
    lr_axis->ticker()->setTickCount(3);
    QCPAxis* tps_axis = throughputAxis();
    tps_axis->setTickLabels(true);
    tps_axis->setTicks(true);
    tps_axis->setLabel(QObject::tr("tokens/s"));
    tps_axis->setLabelColor(kThroughputColor.darker(125));
    tps_axis->setTickLabelColor(kThroughputColor.darker(125));
    tps_axis->setTicker(QSharedPointer<QCPAxisTicker>(new SiTicker));
    tps_axis->ticker()->setTickCount(3);
    rate_rect->setRangeDragAxes({xAxisOf(rate_rect)}, {lr_axis, tps_axis});
    rate_rect->setRangeZoomAxes({xAxisOf(rate_rect)}, {lr_axis, tps_axis});

    // Dragging or zooming any row moves every x axis, so the rows stay comparable.
    for (QCPAxisRect* from : rects_)
        for (QCPAxisRect* to : rects_)
            if (from != to)
                QObject::connect(xAxisOf(from), qOverload<const QCPRange&>(&QCPAxis::rangeChanged), xAxisOf(to),
                                 qOverload<const QCPRange&>(&QCPAxis::setRange));
}

void MetricPlotLayout::resetRanges(const RunConfig& config) {
    // A freshly initialised model predicts nearly uniformly: its first loss is close to ln V.
    const double uniform_loss = std::log(static_cast<double>(std::max<int64_t>(config.model.vocab_size, 2)));
    QCPAxis* loss_y = yAxisOf(rect(MetricPlot::Loss));
    loss_y->setRange(loss_y->scaleType() == QCPAxis::stLogarithmic ? 0.5 : 0.0, 1.15 * uniform_loss);
    QCPAxis* grad_y = yAxisOf(rect(MetricPlot::GradNorm));
    grad_y->setRange(grad_y->scaleType() == QCPAxis::stLogarithmic ? QCPRange(0.01, 10.0) : QCPRange(0.0, 2.0));
    const double peak_lr = config.train.lr > 0.0 ? config.train.lr : 1e-3;
    learningRateAxis()->setRange(0.0, 1.08 * peak_lr);
    throughputAxis()->setRange(0.0, 1000.0);
    QCPAxis* memory_y = yAxisOf(rect(MetricPlot::Memory));
    memory_y->setRange(memory_y->scaleType() == QCPAxis::stLogarithmic
                           ? QCPRange(1024.0 * 1024.0, 1024.0 * 1024.0 * 1024.0)
                           : QCPRange(0.0, 1024.0 * 1024.0 * 1024.0));
}

void MetricPlotLayout::applyXAxis(XAxis axis) {
    QSharedPointer<QCPAxisTicker> ticker;
    switch (axis) {
    case XAxis::Step: ticker.reset(new StepTicker); break;
    case XAxis::Tokens: ticker.reset(new SiTicker); break;
    case XAxis::WallTime: {
        auto* time = new QCPAxisTickerTime;
        time->setTimeFormat(QStringLiteral("%h:%m:%s"));
        ticker.reset(time);
        break;
    }
    }
    for (QCPAxisRect* rect : rects_) {
        QCPAxis* x = xAxisOf(rect);
        x->setTicker(ticker);
        x->setNumberFormat(QStringLiteral("f"));
        x->setNumberPrecision(0);
    }
    xAxisOf(rect(MetricPlot::Memory))->setLabel(xAxisTitle(axis));
}

bool MetricPlotLayout::setLogY(MetricPlot row, bool logarithmic) {
    if (row == MetricPlot::Rates) return false;
    QCPAxis* y = yAxisOf(rect(row));
    if (logY(row) == logarithmic) return false;
    y->setScaleType(logarithmic ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (row == MetricPlot::Memory) {
        // The byte ticker picks MiB or GiB steps; on a log axis it still names the unit.
        if (logarithmic && y->range().lower <= 0) y->setRange(1024.0 * 1024.0, std::max(y->range().upper, 2048.0 * 1024.0));
    } else if (logarithmic) {
        auto* ticker = new QCPAxisTickerLog;
        ticker->setSubTickCount(8);
        y->setTicker(QSharedPointer<QCPAxisTicker>(ticker));
        y->setNumberFormat(QStringLiteral("g"));
        y->setNumberPrecision(3);
        // A log axis cannot show zero or below; the next fit replaces this stopgap.
        if (y->range().lower <= 0) y->setRange(std::max(y->range().upper * 1e-3, 1e-6), std::max(y->range().upper, 1e-5));
    } else {
        y->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        y->setNumberFormat(QStringLiteral("g"));
        y->setNumberPrecision(4);
        if (row == MetricPlot::GradNorm) y->ticker()->setTickCount(3);
    }
    return true;
}

bool MetricPlotLayout::logY(MetricPlot row) const {
    return yAxisOf(rect(row))->scaleType() == QCPAxis::stLogarithmic;
}

}  // namespace trainbench::gui
