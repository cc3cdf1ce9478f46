// ExplorerChart: the batch explorer's measurements against the micro-batch size: tokens/s and peak memory.
#include "batch/explorer_chart.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace trainbench::gui {

namespace {

const QColor kThroughputColor(44, 160, 44);
const QColor kMemoryColor(118, 72, 170);
const QColor kBudgetColor(176, 0, 32);
const QColor kRecommendedColor(44, 160, 44);

// Room around the outermost splits on the log axis, as a factor: the end markers stay whole.
constexpr double kSplitMargin = 1.45;

struct ByteUnit {
    double bytes;
    const char* name;
};

// The largest binary unit in which `bytes` is still at least 1, so axis ticks read 1 .. 1023.
ByteUnit unitFor(double bytes) {
    static constexpr std::array<ByteUnit, 5> kUnits{{{1.0, "B"},
                                                     {1024.0, "KiB"},
                                                     {1024.0 * 1024.0, "MiB"},
                                                     {1024.0 * 1024.0 * 1024.0, "GiB"},
                                                     {1024.0 * 1024.0 * 1024.0 * 1024.0, "TiB"}}};
    ByteUnit unit = kUnits[0];
    for (const ByteUnit& candidate : kUnits)
        if (bytes >= candidate.bytes) unit = candidate;
    return unit;
}

void styleAxis(QCPAxis* axis, const QColor& color, const QFont& tick_font, const QFont& label_font) {
    axis->setTickLabelFont(tick_font);
    axis->setLabelFont(label_font);
    axis->grid()->setPen(QPen(QColor(225, 225, 225), 0, Qt::SolidLine));
    axis->grid()->setSubGridVisible(false);
    if (color.isValid()) {
        axis->setLabelColor(color);
        axis->setTickLabelColor(color);
    }
}

}  // namespace

ExplorerChart::ExplorerChart(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("explorerChart"));
    setMinimumSize(360, 220);
    setAutoAddPlottableToLegend(false);

    QFont tick_font = font();
    QFont label_font = font();
    label_font.setPointSizeF(tick_font.pointSizeF() + 1.0);

    // Splits are divisors (1, 2, 4, 8, ...): a log axis spaces them evenly; the ticks are
    // exactly the splits, so no tick names an m that was never measured.
    xAxis->setScaleType(QCPAxis::stLogarithmic);
    xAxis->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));
    xAxis->setLabel(tr("micro-batch size m"));
    styleAxis(xAxis, QColor(), tick_font, label_font);
    xAxis->grid()->setVisible(true);

    yAxis->setLabel(tr("tokens / s"));
    yAxis->setNumberFormat(QStringLiteral("f"));
    yAxis->setNumberPrecision(0);
    yAxis->ticker()->setTickCount(4);
    styleAxis(yAxis, kThroughputColor.darker(125), tick_font, label_font);

    yAxis2->setVisible(true);
    yAxis2->setNumberFormat(QStringLiteral("g"));
    yAxis2->setNumberPrecision(3);
    yAxis2->ticker()->setTickCount(4);
    yAxis2->grid()->setVisible(false);
    styleAxis(yAxis2, kMemoryColor, tick_font, label_font);

    // The band first, on the grid layer: it lies under the curves it highlights.
    recommended_band_ = new QCPItemRect(this);
    recommended_band_->setLayer(QStringLiteral("grid"));
    for (QCPItemPosition* corner : {recommended_band_->topLeft, recommended_band_->bottomRight}) {
        corner->setTypeX(QCPItemPosition::ptPlotCoords);
        corner->setTypeY(QCPItemPosition::ptAxisRectRatio);
        corner->setAxes(xAxis, yAxis);
        corner->setAxisRect(axisRect());
    }
    QColor band = kRecommendedColor;
    band.setAlpha(40);
    recommended_band_->setBrush(band);
    recommended_band_->setPen(Qt::NoPen);
    recommended_band_->setVisible(false);

    throughput_ = addGraph(xAxis, yAxis);
    throughput_->setName(tr("tokens / s"));
    throughput_->setPen(QPen(kThroughputColor, 2.2));
    throughput_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kThroughputColor, kThroughputColor, 7));

    measured_peak_ = addGraph(xAxis, yAxis2);
    measured_peak_->setName(tr("measured peak"));
    measured_peak_->setPen(QPen(kMemoryColor, 2.0));
    measured_peak_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, kMemoryColor, kMemoryColor, 6));

    planned_peak_ = addGraph(xAxis, yAxis2);
    planned_peak_->setName(tr("planned peak"));
    planned_peak_->setPen(QPen(kMemoryColor.lighter(135), 1.5, Qt::DashLine));
    planned_peak_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, kMemoryColor.lighter(135), 6));

    out_of_memory_ = addGraph(xAxis, yAxis2);
    out_of_memory_->setName(tr("out of memory"));
    out_of_memory_->setLineStyle(QCPGraph::lsNone);
    out_of_memory_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCross, QPen(kBudgetColor, 2.0), QBrush(), 11));

    budget_line_ = new QCPItemStraightLine(this);
    for (QCPItemPosition* end : {budget_line_->point1, budget_line_->point2}) end->setAxes(xAxis, yAxis2);
    budget_line_->setPen(QPen(kBudgetColor, 1.2, Qt::DashLine));
    budget_line_->setVisible(false);
    budget_label_ = new QCPItemText(this);
    budget_label_->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    budget_label_->position->setTypeY(QCPItemPosition::ptPlotCoords);
    budget_label_->position->setAxes(xAxis, yAxis2);
    budget_label_->position->setAxisRect(axisRect());
    budget_label_->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
    budget_label_->setColor(kBudgetColor);
    budget_label_->setFont(tick_font);
    budget_label_->setVisible(false);

    recommended_label_ = new QCPItemText(this);
    recommended_label_->position->setTypeX(QCPItemPosition::ptPlotCoords);
    recommended_label_->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    recommended_label_->position->setAxes(xAxis, yAxis);
    recommended_label_->position->setAxisRect(axisRect());
    recommended_label_->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
    recommended_label_->setColor(kRecommendedColor.darker(150));
    recommended_label_->setFont(tick_font);
    recommended_label_->setPadding(QMargins(4, 2, 4, 2));
    recommended_label_->setBrush(QColor(255, 255, 255, 215));
    recommended_label_->setVisible(false);

    legend->setFont(tick_font);
    legend->setBrush(QColor(255, 255, 255, 215));
    legend->setBorderPen(QPen(QColor(190, 190, 190)));
    legend->setRowSpacing(0);
    legend->setVisible(true);
    for (QCPGraph* graph : {throughput_, measured_peak_, planned_peak_}) graph->addToLegend(legend);
    // Below the axes in one row rather than inside them: wherever it sat inside, some split's
    // rate or peak could lie under it.
    axisRect()->insetLayout()->take(legend);
    axisRect()->insetLayout()->simplify();
    auto* legend_row = new QCPLayoutGrid;
    plotLayout()->addElement(1, 0, legend_row);
    legend_row->setMargins(QMargins(0, 0, 0, 4));
    legend_row->addElement(0, 0, legend);
    // Two entries a line: four (with "out of memory") fit the narrowest chart without clipping.
    legend->setWrap(2);
    legend->setFillOrder(QCPLegend::foColumnsFirst);
    legend->setColumnSpacing(16);
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    plotLayout()->setRowStretchFactor(1, 0.001);

    placeholder_ = new QCPItemText(this);
    placeholder_->position->setType(QCPItemPosition::ptAxisRectRatio);
    placeholder_->position->setAxisRect(axisRect());
    placeholder_->position->setCoords(0.5, 0.42);
    placeholder_->setPositionAlignment(Qt::AlignCenter);
    placeholder_->setText(
        tr("Press Explore: each split\nm × K of the global batch\ntrains a few steps and\nis measured here."));
    placeholder_->setTextAlignment(Qt::AlignCenter);
    placeholder_->setColor(QColor(130, 130, 130));
    placeholder_->setFont(label_font);

    resetSplits({});
}

void ExplorerChart::resetSplits(const std::vector<int64_t>& micro_batch_sizes) {
    splits_ = micro_batch_sizes;
    rows_.clear();
    recommended_ = -1;
    rebuild();
}

void ExplorerChart::addRow(const ExploreRow& row) {
    rows_.push_back(row);
    rebuild();
}

void ExplorerChart::setRecommended(int row) {
    recommended_ = row >= 0 && row < static_cast<int>(rows_.size()) ? row : -1;
    rebuild();
}

void ExplorerChart::setBudget(int64_t limit_bytes) {
    budget_bytes_ = std::max<int64_t>(limit_bytes, 0);
    rebuild();
}

void ExplorerChart::rebuild() {
    std::vector<int64_t> ticks = splits_;
    for (const ExploreRow& row : rows_)
        if (std::find(ticks.begin(), ticks.end(), row.micro_batch_size) == ticks.end())
            ticks.push_back(row.micro_batch_size);
    std::sort(ticks.begin(), ticks.end());
    auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(xAxis->ticker());
    ticker->clear();
    for (int64_t m : ticks) ticker->addTick(static_cast<double>(m), QString::number(m));
    const double x_lower = ticks.empty() ? 1.0 : static_cast<double>(ticks.front());
    const double x_upper = ticks.empty() ? 16.0 : static_cast<double>(ticks.back());
    xAxis->setRange(x_lower / kSplitMargin, x_upper * kSplitMargin);

    double largest_bytes = 0;
    for (const ExploreRow& row : rows_)
        largest_bytes = std::max({largest_bytes, double(row.measured_peak_bytes), double(row.estimated_peak_bytes)});
    // A budget far above every peak (a host's RAM against a small model) would squash the curves
    // to the axis; it is drawn only when it is on their scale.
    const bool budget_on_scale = budget_bytes_ > 0 && largest_bytes > 0 && budget_bytes_ <= 2.0 * largest_bytes;
    if (budget_on_scale) largest_bytes = std::max(largest_bytes, double(budget_bytes_));
    const ByteUnit unit = unitFor(largest_bytes);
    bytes_per_unit_ = unit.bytes;
    // Short: the chart may be 225 px tall at 1280 x 800, and a vertical title longer than the
    // plot is cut at both ends (test_text_fits checks the axis titles).
    yAxis2->setLabel(largest_bytes > 0 ? tr("peak per rank (%1)").arg(QString::fromLatin1(unit.name))
                                       : tr("peak per rank"));

    throughput_->data()->clear();
    measured_peak_->data()->clear();
    planned_peak_->data()->clear();
    out_of_memory_->data()->clear();
    double largest_rate = 0;
    for (const ExploreRow& row : rows_) {
        const double m = static_cast<double>(row.micro_batch_size);
        planned_peak_->addData(m, double(row.estimated_peak_bytes) / bytes_per_unit_);
        if (row.fits) {
            throughput_->addData(m, row.tokens_per_s);
            measured_peak_->addData(m, double(row.measured_peak_bytes) / bytes_per_unit_);
            largest_rate = std::max(largest_rate, row.tokens_per_s);
        } else {
            // Where it gave up: the bytes held when the allocation failed, else the plan.
            const int64_t bytes = row.measured_peak_bytes > 0 ? row.measured_peak_bytes : row.estimated_peak_bytes;
            out_of_memory_->addData(m, double(bytes) / bytes_per_unit_);
        }
    }
    const bool any_out_of_memory = out_of_memory_->dataCount() > 0;
    if (any_out_of_memory && !legend->hasItemWithPlottable(out_of_memory_)) out_of_memory_->addToLegend(legend);
    if (!any_out_of_memory && legend->hasItemWithPlottable(out_of_memory_)) out_of_memory_->removeFromLegend(legend);

    // Rates and bytes both start at zero: a bar-free chart must not exaggerate differences.
    yAxis->setRange(0.0, largest_rate > 0 ? 1.18 * largest_rate : 1000.0);
    yAxis2->setRange(0.0, largest_bytes > 0 ? 1.18 * largest_bytes / bytes_per_unit_ : 1.0);

    budget_line_->setVisible(budget_on_scale);
    budget_label_->setVisible(budget_on_scale);
    if (budget_on_scale) {
        const double budget = double(budget_bytes_) / bytes_per_unit_;
        budget_line_->point1->setCoords(x_lower, budget);
        budget_line_->point2->setCoords(x_upper, budget);
        budget_label_->position->setCoords(0.99, budget);
        budget_label_->setText(tr("budget %1 %2").arg(budget, 0, 'g', 3).arg(QString::fromLatin1(unit.name)));
    }

    const bool marked = recommended_ >= 0;
    recommended_band_->setVisible(marked);
    recommended_label_->setVisible(marked);
    if (marked) {
        const ExploreRow& best = rows_[static_cast<size_t>(recommended_)];
        const double m = static_cast<double>(best.micro_batch_size);
        // A band of constant width on the log axis: the same factor either side of m.
        recommended_band_->topLeft->setCoords(m / 1.12, 0.0);
        recommended_band_->bottomRight->setCoords(m * 1.12, 1.0);
        recommended_label_->position->setCoords(m, 0.02);
        // Centred over its band, except at the ends of the axis, where it would be cut off.
        Qt::Alignment horizontal = Qt::AlignHCenter;
        if (ticks.size() > 1 && best.micro_batch_size == ticks.front()) horizontal = Qt::AlignLeft;
        if (ticks.size() > 1 && best.micro_batch_size == ticks.back()) horizontal = Qt::AlignRight;
        recommended_label_->setPositionAlignment(horizontal | Qt::AlignTop);
        recommended_label_->setText(
            tr("recommended: m %1 × K %2").arg(best.micro_batch_size).arg(best.gradient_accumulation_steps));
    }
    placeholder_->setVisible(rows_.empty());
    replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace trainbench::gui
