// How the memory plan reads in words: the budget bar's share, the planner's "what fits" on the target, the step time's terms and this machine's measured rates.
#include "batch/plan_wording.h"

#include <QObject>
#include <QStringList>

#include <cmath>

#include "common/display_format.h"

namespace trainbench::gui {

namespace {

QString ranksText(int64_t world_size) {
    return world_size == 1 ? QObject::tr("1 rank") : QObject::tr("%1 ranks").arg(world_size);
}

QString fewestRanksText(const LayoutAdvice& advice, bool without_offload) {
    if (advice.fewest_ranks <= 0) return QObject::tr("No number of ranks up to 4096 fits m 1.");
    return (without_offload ? QObject::tr("Fewest ranks at m 1 without offload: %1 (%2).")
                            : QObject::tr("Fewest ranks at m 1: %1 (%2)."))
        .arg(advice.fewest_ranks)
        .arg(describeMemoryLayout(advice.fewest_ranks_layout));
}

QString milliseconds(double seconds) { return QObject::tr("%1 ms").arg(seconds * 1e3, 0, 'f', 1); }

// A measured rate to two or three significant digits: "38", "1.2", "0.11", "0.004".
QString rate(double value) {
    return value >= 10 ? QString::number(value, 'f', 0) : value >= 1 ? QString::number(value, 'f', 1) : QString::number(value, 'g', 2);
}

}  // namespace

QString describeMemoryLayout(const MemoryLayout& l, bool with_micro_batch) {
    const QString stage = l.expert_parallel > 1 ? QObject::tr("stage %1 with EP %2").arg(l.zero_stage).arg(l.expert_parallel)
                                                : QObject::tr("stage %1").arg(l.zero_stage);
    QString text = QObject::tr("%1, recompute %2").arg(stage, QString::fromStdString(l.activation_checkpointing));
    if (with_micro_batch) text += QObject::tr(", m %1").arg(l.micro_batch_size);
    if (!isChoice(l.offload, Offload::None))
        text += QObject::tr(", offload %1 → %2")
                    .arg(QString::fromStdString(l.offload), l.nvme ? QObject::tr("NVMe") : QObject::tr("host memory"));
    return text;
}

QString formatShareOfBudget(double share, const QString& what) {
    const QString measured = what.isEmpty() ? QObject::tr("peak") : what;
    // Below 0.1 % the bar's own percentage would read "0 %", which is true but says nothing;
    // past twice the budget a percentage no longer reads as a size ("42476.0 %"): a multiple does.
    if (share < 0.001) return QObject::tr("%1: < 0.1 % of the budget").arg(measured);
    if (share < 2.0) return QObject::tr("%1: %2 % of the budget").arg(measured).arg(100.0 * share, 0, 'f', 1);
    return QObject::tr("%1: %2× the budget").arg(measured).arg(share, 0, 'f', share < 10.0 ? 1 : 0);
}

QString describeLayoutAdvice(const LayoutAdvice& advice, int64_t world_size) {
    if (advice.limit_bytes <= 0) return QObject::tr("What fits: no budget to plan against.");
    const QString here = advice.cheapest.micro_batch_size > 0
                             ? QObject::tr("Cheapest that fits on %1, %2 % to spare: %3.")
                                   .arg(ranksText(world_size))
                                   .arg(std::lround(100 * kLayoutSafetyMargin))
                                   .arg(describeMemoryLayout(advice.cheapest))
                             : QObject::tr("Nothing fits on %1, even at m 1.").arg(ranksText(world_size));
    return here + QLatin1Char(' ') + fewestRanksText(advice, false);
}

QString describeTargetAdvice(const TargetAdvice& advice, const RunConfig& config, const TargetMachine& target) {
    const RunConfig placed = configOnTarget(config, target);
    const int64_t world_size = placed.runtime.world_size;
    const LayoutAdvice& layout = advice.layout;
    if (layout.limit_bytes <= 0 || (!advice.offloaded && layout.cheapest.micro_batch_size > 0))
        return describeLayoutAdvice(layout, world_size);
    QString here;
    if (advice.offloaded) {
        const MemoryPlan& plan = layout.cheapest_plan;
        const int64_t rpn = std::max<int64_t>(1, plan.ranks_per_node);
        QString needs = QObject::tr("peak %1, host memory %2 a node").arg(formatBytes(plan.peak_bytes), formatBytes(plan.host_bytes * rpn));
        if (plan.nvme_bytes > 0) needs += QObject::tr(", NVMe %1 a node").arg(formatBytes(plan.nvme_bytes * rpn));
        const StepTimePlan time = predictStepTime(withLayout(placed, layout.cheapest), plan, target);
        here = QObject::tr("Nothing fits on %1 without offload. With offload, %2 % to spare: %3 (%4, K %5); %6.")
                   .arg(ranksText(world_size))
                   .arg(std::lround(100 * kLayoutSafetyMargin))
                   .arg(describeMemoryLayout(layout.cheapest), needs)
                   .arg(plan.gradient_accumulation_steps)
                   .arg(QString::fromStdString(describeStepTime(time)));
    } else {
        here = advice.why_none.empty()
                   ? QObject::tr("Nothing fits on %1, even at m 1.").arg(ranksText(world_size))
                   : QObject::tr("Nothing fits on %1, even at m 1: %2.")
                         .arg(ranksText(world_size), QString::fromStdString(advice.why_none));
    }
    return here + QLatin1Char(' ') + fewestRanksText(layout, true);
}

QString describeStepTimeTerms(const StepTimePlan& t, int64_t gradient_accumulation_steps) {
    QStringList lines;
    lines << QObject::tr("Per micro-batch (× %1, overlapped): compute %2 (%3 TFLOP), collectives %4, PCIe up %5 and "
                         "down %6 (at once), NVMe reads %7 and writes %8, the node's host memory %9 (host adds %10 of it).")
                 .arg(gradient_accumulation_steps)
                 .arg(milliseconds(t.compute_s))
                 .arg(t.flops_per_micro_batch / 1e12, 0, 'g', 3)
                 .arg(milliseconds(t.collectives_s), milliseconds(t.pcie_up_s), milliseconds(t.pcie_down_s),
                      milliseconds(t.nvme_read_s), milliseconds(t.nvme_write_s), milliseconds(t.host_memory_s))
                 .arg(milliseconds(t.host_adds_s));
    if (t.optimizer_s + t.nvme_step_s + t.weights_up_s + t.gradients_down_s > 0)
        lines << QObject::tr("Per step: gradients down %1 (beside the last backward), CPU AdamW %2, NVMe %3 (pipelined "
                             "with it), host memory %4 (all three), weights up %5.")
                     .arg(milliseconds(t.gradients_down_s), milliseconds(t.optimizer_s), milliseconds(t.nvme_step_s),
                          milliseconds(t.tail_host_memory_s), milliseconds(t.weights_up_s));
    if (t.to_device_bytes + t.to_host_bytes + t.nvme_read_bytes + t.nvme_write_bytes > 0)
        lines << QObject::tr("Moved a step, every rank: to the devices %1, to the host %2, NVMe read %3, written %4 "
                             "(the run's io/ points in the memory plot).")
                     .arg(formatBytes(int64_t(t.to_device_bytes)), formatBytes(int64_t(t.to_host_bytes)),
                          formatBytes(int64_t(t.nvme_read_bytes)), formatBytes(int64_t(t.nvme_write_bytes)));
    return lines.join(QLatin1Char('\n'));
}

QString describeWindowOrders(const MemoryPlan& plan, const StepTimePlan& other_time, bool other_fits) {
    const bool unit = plan.placement.unit_order;
    const QString other = unit ? QObject::tr("micro-batch") : QObject::tr("unit");
    QString text = unit ? QObject::tr("by unit (weights twice a window)") : QObject::tr("by micro-batch");
    if (!other_fits) return text + QObject::tr("; by %1: does not fit").arg(other);
    return text + QObject::tr("; by %1: %2").arg(other, QString::fromStdString(describeStepTime(other_time)));
}

QString describeMachineFigures(const MachineProbe& p) {
    QString text = QObject::tr("measured: host copy %1 GB/s, CPU %2 TFLOP/s fp32 (%3)")
                       .arg(rate(p.host_copy_gbps), rate(p.cpu_fp32_tflops),
                            p.threads == 1 ? QObject::tr("1 thread") : QObject::tr("%1 threads").arg(p.threads));
    if (p.cpu_adamw_gparams > 0)
        text += QObject::tr(", AdamW %1 billion parameters/s").arg(rate(p.cpu_adamw_gparams));
    if (p.rank_collectives_gbps > 0)
        text += QObject::tr(", collectives %1 GB/s among %2 rank threads").arg(rate(p.rank_collectives_gbps)).arg(p.collective_ranks);
    if (!p.directory.empty())
        text += QObject::tr("; %1: written %2 GB/s, read %3 GB/s")
                    .arg(QString::fromStdString(p.directory), rate(p.directory_write_gbps), rate(p.directory_read_gbps));
    return text;
}

}  // namespace trainbench::gui
