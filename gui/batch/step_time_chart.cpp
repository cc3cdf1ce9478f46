// StepTimeChart: the planner's step time drawn as phases, each coloured by the term that paces it.
#include "batch/step_time_chart.h"

#include <algorithm>
#include <initializer_list>
#include <utility>

#include <QFontMetrics>
#include <QPainter>
#include <QPaintEvent>

#include "common/display_format.h"
#include "trainbench/config_choices.h"

namespace trainbench::gui {
namespace {

constexpr int kBarHeight = 18;
constexpr int kRowGap = 8;

// The longest of `terms`; the first one on a tie.
std::pair<QString, double> longest(std::initializer_list<std::pair<QString, double>> terms) {
    std::pair<QString, double> best{QString(), 0.0};
    for (const auto& term : terms)
        if (term.second > best.second) best = term;
    return best;
}

// A span as the chart writes it: milliseconds below a second, then the workbench's durations.
QString spanText(double seconds) {
    if (seconds < 1.0) return QObject::tr("%1 ms").arg(seconds * 1e3, 0, 'f', seconds < 0.01 ? 2 : 0);
    return formatDuration(seconds);
}

}  // namespace

StepTimeChart::StepTimeChart(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("stepTimeChart"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void StepTimeChart::showPlan(const RunConfig& placed, const MemoryPlan& plan, const TargetMachine& target) {
    std::vector<Row> rows;
    const bool unit = plan.placement.unit_order;
    const auto orderName = [](bool by_unit) { return by_unit ? tr("by unit") : tr("by micro-batch"); };
    rows.push_back({tr("%1 (planned)").arg(orderName(unit)), predictStepTime(placed, plan, target),
                    plan.gradient_accumulation_steps, plan.fits});
    // The order matters only with the weights streamed to the device and whole blocks recomputed.
    if (plan.placement.weightsOffDevice() && recomputation(placed.runtime) == Recomputation::Full) {
        RunConfig other = placed;
        other.runtime.window_schedule = unit ? "micro_batch" : "unit";
        const MemoryPlan other_plan = planOnTarget(other, target);
        rows.push_back({orderName(!unit), predictStepTime(other, other_plan, target),
                        other_plan.gradient_accumulation_steps, other_plan.fits});
    }
    rows_ = std::move(rows);
    QStringList tip;
    for (const Row& row : rows_) {
        QStringList totals;
        for (const TermTotal& total : termTotals(row.time, row.accumulation_steps))
            totals << QStringLiteral("%1 %2").arg(total.term, spanText(total.seconds));
        tip << tr("%1: %2, bound by %3. Over the step (overlapped): %4.")
                   .arg(row.label, spanText(row.time.step_s), QString::fromStdString(row.time.bound),
                        totals.join(QStringLiteral(", ")));
    }
    setToolTip(tip.join(QLatin1Char('\n')));
    // Without a step time (the target's figures missing) the chart takes no room. It is never
    // hidden: a form keeps the height it found a hidden widget to have.
    updateGeometry();
    update();
}

bool StepTimeChart::hasStep() const {
    return !rows_.empty() && rows_.front().time.step_s > 0;
}

std::vector<StepTimeChart::Phase> StepTimeChart::phases(const StepTimePlan& t, int64_t accumulation_steps) {
    std::vector<Phase> out;
    const double window = std::min(t.step_s, double(std::max<int64_t>(accumulation_steps, 1)) * t.micro_batch_s);
    const auto pace = longest({{tr("compute"), t.compute_s},
                               {tr("collectives"), t.collectives_s},
                               {tr("PCIe up"), t.pcie_up_s},
                               {tr("PCIe down"), t.pcie_down_s},
                               {tr("NVMe"), t.nvme_read_s + t.nvme_write_s},
                               {tr("host memory"), t.host_memory_s}});
    if (window > 0) out.push_back({pace.first.isEmpty() ? tr("compute") : pace.first, window});
    const double up = std::clamp(t.weights_up_s, 0.0, t.step_s - window);
    const double tail = t.step_s - window - up;
    // The tail after the last backward: the CPU step with the NVMe moves pipelined beside it,
    // the gradients landing, all on the node's host memory.
    const auto tail_pace = longest({{tr("CPU AdamW"), t.optimizer_s},
                                    {tr("NVMe"), t.nvme_step_s},
                                    {tr("PCIe down"), t.gradients_down_s},
                                    {tr("host memory"), t.tail_host_memory_s}});
    if (tail > 1e-12) out.push_back({tail_pace.first.isEmpty() ? tr("CPU AdamW") : tail_pace.first, tail});
    if (up > 0) out.push_back({tr("PCIe up"), up});
    return out;
}

std::vector<StepTimeChart::TermTotal> StepTimeChart::termTotals(const StepTimePlan& t, int64_t accumulation_steps) {
    const double K = double(std::max<int64_t>(accumulation_steps, 1));
    std::vector<TermTotal> out;
    for (const TermTotal& total : {TermTotal{tr("compute"), K * t.compute_s},
                                   TermTotal{tr("collectives"), K * t.collectives_s},
                                   TermTotal{tr("PCIe up"), K * t.pcie_up_s + t.weights_up_s},
                                   TermTotal{tr("PCIe down"), K * t.pcie_down_s + t.gradients_down_s},
                                   TermTotal{tr("NVMe"), K * (t.nvme_read_s + t.nvme_write_s) + t.nvme_step_s},
                                   TermTotal{tr("host memory"), K * t.host_memory_s + t.tail_host_memory_s},
                                   TermTotal{tr("CPU AdamW"), t.optimizer_s}})
        if (total.seconds > 0) out.push_back(total);
    return out;
}

QColor StepTimeChart::termColor(const QString& term) {
    if (term == tr("compute")) return QColor(31, 119, 180);
    if (term == tr("collectives")) return QColor(148, 103, 189);
    if (term == tr("PCIe up")) return QColor(255, 127, 14);
    if (term == tr("PCIe down")) return QColor(214, 156, 70);
    if (term == tr("NVMe")) return QColor(140, 86, 75);
    if (term == tr("host memory")) return QColor(127, 127, 127);
    if (term == tr("CPU AdamW")) return QColor(44, 160, 44);
    return QColor(100, 100, 100);
}

QSize StepTimeChart::sizeHint() const {
    const int line = fontMetrics().height();
    return {360, hasStep() ? int(rows_.size()) * (2 * line + kBarHeight + 4 + kRowGap) : 0};
}

QSize StepTimeChart::minimumSizeHint() const {
    return {200, sizeHint().height()};
}

void StepTimeChart::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing, false);
    const QFontMetrics metrics = fontMetrics();
    const int line = metrics.height();
    double longest_step = 0;
    for (const Row& row : rows_) longest_step = std::max(longest_step, row.time.step_s);
    if (!hasStep() || longest_step <= 0) return;
    const int width = this->width() - 1;
    int y = 0;
    for (size_t r = 0; r < rows_.size(); ++r) {
        const Row& row = rows_[r];
        // The row's name, then the planner's sentence for it.
        QFont name_font = font();
        name_font.setBold(r == 0);
        painter.setFont(name_font);
        painter.setPen(palette().color(QPalette::WindowText));
        const QString verdict = !row.fits ? tr("does not fit")
                                          : tr("%1 · bound by %2").arg(spanText(row.time.step_s),
                                                                        QString::fromStdString(row.time.bound));
        painter.drawText(QRect(0, y, width, line), Qt::AlignLeft | Qt::AlignVCenter, row.label + QLatin1Char(':'));
        // The verdict after the name, cut short (the tooltip has it whole) when the row is narrow.
        const int name_width = QFontMetrics(name_font).horizontalAdvance(row.label + QStringLiteral(":  "));
        painter.setFont(font());
        painter.drawText(QRect(name_width, y, std::max(0, width - name_width), line), Qt::AlignLeft | Qt::AlignVCenter,
                         metrics.elidedText(verdict, Qt::ElideRight, std::max(0, width - name_width)));
        y += line + 2;

        // The bar: the row's phases, to the scale of the longest step shown.
        double x = 0;
        for (const Phase& phase : phases(row.time, row.accumulation_steps)) {
            const double w = phase.seconds / longest_step * width;
            const QRectF segment(x, y, w, kBarHeight);
            painter.fillRect(segment, termColor(phase.term));
            const QString text = QStringLiteral("%1 %2").arg(phase.term, spanText(phase.seconds));
            if (metrics.horizontalAdvance(text) + 6 < w) {
                painter.setPen(Qt::white);
                painter.drawText(segment, Qt::AlignCenter, text);
            } else if (metrics.horizontalAdvance(phase.term) + 6 < w) {
                painter.setPen(Qt::white);
                painter.drawText(segment, Qt::AlignCenter, phase.term);
            }
            x += w;
        }
        y += kBarHeight + 2;

        // Each term over the whole step: they overlap, so they add up to more than the step.
        QStringList totals;
        for (const TermTotal& total : termTotals(row.time, row.accumulation_steps))
            totals << QStringLiteral("%1 %2").arg(total.term, spanText(total.seconds));
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(QRect(0, y, width, line), Qt::AlignLeft | Qt::AlignVCenter,
                         metrics.elidedText(totals.join(QStringLiteral(" · ")), Qt::ElideRight, width));
        y += line + kRowGap;
    }
}

}  // namespace trainbench::gui
