// OffloadTiers: the planned memory box's three tiers as bars against their budgets: the device's peak, a node's host memory, a node's NVMe (offload_dir); the verdict over all three.
#include "batch/offload_tiers.h"

#include <algorithm>
#include <cmath>

#include <QFormLayout>
#include <QLabel>
#include <QProgressBar>

#include "batch/plan_wording.h"
#include "common/display_format.h"

namespace trainbench::gui {

namespace {

const QColor kFitsColor(30, 120, 40);
const QColor kDoesNotFitColor(176, 0, 32);
constexpr int kBarSteps = 1000;

// Where the plan's placement keeps the moments: off the device, and in offload_dir's files.
bool offloaded(const MemoryPlan& plan) { return plan.placement.moments != Tier::Device; }
bool onDisk(const MemoryPlan& plan) { return plan.placement.moments == Tier::File; }

QLabel* tierLabel(const QString& object_name, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName(object_name);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return label;
}

QProgressBar* tierBar(const QString& object_name, QWidget* parent) {
    auto* bar = new QProgressBar(parent);
    bar->setObjectName(object_name);
    bar->setRange(0, kBarSteps);
    bar->setTextVisible(true);
    return bar;
}

// A share of a budget on the bar (full past the budget), green while it fits, red when not.
void fillBar(QProgressBar* bar, double share, bool fits, const QString& text) {
    bar->setValue(static_cast<int>(std::clamp(std::lround(kBarSteps * share), 0L, long(kBarSteps))));
    bar->setFormat(text);
    // A bar's text is clipped, not elided, when the column is narrow: the tooltip keeps it whole.
    bar->setToolTip(text);
    QPalette palette = bar->palette();
    palette.setColor(QPalette::Highlight, fits ? kFitsColor : kDoesNotFitColor);
    bar->setPalette(palette);
}

void emptyBar(QProgressBar* bar, const QString& text) {
    bar->setValue(0);
    bar->setFormat(text);
    bar->setToolTip(text);
}

QString percent(double share) {
    if (share > 0 && share < 0.001) return QObject::tr("< 0.1 %");
    if (share < 2.0) return QObject::tr("%1 %").arg(100.0 * share, 0, 'f', 1);
    return QObject::tr("%1×").arg(share, 0, 'f', share < 10.0 ? 1 : 0);
}

// "one H100 80 GB" from the target's "8 x H100 80 GB".
QString oneDevice(const TargetMachine& target) {
    const QString label = QString::fromStdString(target.label);
    const qsizetype times = label.indexOf(QStringLiteral(" x "));
    return times >= 0 ? QObject::tr("one %1").arg(label.mid(times + 3)) : label;
}

}  // namespace

OffloadTiers::OffloadTiers(QFormLayout* form, QWidget* box) : QObject(box), form_(form) {
    budget_label_ = tierLabel(QStringLiteral("planBudgetLabel"), box);
    budget_bar_ = tierBar(QStringLiteral("planBudgetBar"), box);
    host_label_ = tierLabel(QStringLiteral("planHostLabel"), box);
    host_bar_ = tierBar(QStringLiteral("planHostBar"), box);
    disk_label_ = tierLabel(QStringLiteral("planDiskLabel"), box);
    disk_bar_ = tierBar(QStringLiteral("planDiskBar"), box);
    verdict_label_ = new QLabel(box);
    verdict_label_->setObjectName(QStringLiteral("planVerdictLabel"));
    verdict_label_->setWordWrap(true);
    QFont bold = verdict_label_->font();
    bold.setBold(true);
    verdict_label_->setFont(bold);
    largest_fitting_label_ = tierLabel(QStringLiteral("largestFittingLabel"), box);

    form_->addRow(tr("Device budget:"), budget_label_);
    form_->addRow(budget_bar_);
    form_->addRow(tr("Host memory:"), host_label_);
    form_->addRow(host_bar_);
    form_->addRow(tr("NVMe (offload_dir):"), disk_label_);
    form_->addRow(disk_bar_);
    form_->addRow(verdict_label_);
    form_->addRow(tr("Largest m that fits:"), largest_fitting_label_);
    for (QWidget* row : {static_cast<QWidget*>(host_label_), static_cast<QWidget*>(host_bar_),
                         static_cast<QWidget*>(disk_label_), static_cast<QWidget*>(disk_bar_)})
        form_->setRowVisible(row, false);
}

QString OffloadTiers::describeMoments(const MemoryPlan& plan, const RunConfig& config, const QString& on_device) {
    if (!offloaded(plan)) return on_device;
    return !onDisk(plan)
               ? tr("%1 in host memory").arg(formatBytes(plan.optimizer_bytes))
               : tr("%1 on disk").arg(formatBytes(plan.optimizer_bytes));
}

std::pair<QString, QString> OffloadTiers::describeGradients(const MemoryPlan& plan, const QString& on_device) {
    const QString dtype = plan.gradient_sum_element_bytes == 2 ? QStringLiteral("bf16") : QStringLiteral("fp32");
    if (plan.gradients_in_file)
        return {tr("on disk (%1)").arg(formatBytes(plan.nvme_gradient_bytes)),
                tr("Neither the device nor host memory can keep the %1 sums of its gradient slices: the window "
                   "runs unit by unit, and each unit's sums are written to runtime.offload_dir once finished, read "
                   "back by the optimizer's step.").arg(dtype)};
    if (plan.gradients_on_host)
        return {tr("on the host (%1)").arg(formatBytes(plan.host_gradient_bytes)),
                plan.placement.unit_order
                    ? tr("The device cannot keep the %1 sums of its gradient slices: the window runs unit by unit, "
                         "and each unit's sums are copied to host memory once finished.").arg(dtype)
                    : tr("The device cannot keep the %1 sums of its gradient slices: they are summed in host memory.").arg(dtype)};
    return {on_device, QString()};
}

std::pair<QString, QString> OffloadTiers::describeBoundaries(const MemoryPlan& plan) {
    if (!plan.placement.unit_order) return {};
    const QString what = tr("The window runs unit by unit: every block's input of each of its micro-batches waits "
                            "for the block's backward, and the gradient handed from unit to unit for the next.");
    switch (plan.placement.boundaries) {
        case Tier::Host:
            return {tr("%1 in host memory").arg(formatBytes(plan.host_boundary_bytes)),
                    what + QLatin1Char(' ') + tr("The device cannot keep them: each goes down when made and comes back up for each use.")};
        case Tier::File:
            return {tr("%1 on disk").arg(formatBytes(plan.nvme_boundary_bytes)),
                    what + QLatin1Char(' ') + tr("Neither the device nor host memory can keep them: each is written to "
                                                 "runtime.offload_dir once and read back for each use.")};
        case Tier::Device: break;
    }
    return {tr("%1 on the device").arg(formatBytes(plan.boundary_bytes)), what};
}

QString OffloadTiers::describeNodeShare(int64_t bytes_per_rank, int64_t ranks_per_node, int64_t limit_per_node) {
    const int64_t node_bytes = bytes_per_rank * std::max<int64_t>(1, ranks_per_node);
    if (limit_per_node <= 0) return tr("a node: %1").arg(formatBytes(node_bytes));
    return tr("a node: %1 of %2 (%3)")
        .arg(formatBytes(node_bytes), formatBytes(limit_per_node), percent(double(node_bytes) / double(limit_per_node)));
}

void OffloadTiers::showPlan(const MemoryPlan& plan, const RunConfig& config, const TargetMachine& target,
                            const TargetAdvice& advice) {
    const bool host_row = offloaded(plan) || advice.offloaded;
    const bool nvme_row = onDisk(plan) ||
                          (advice.offloaded && advice.layout.cheapest.nvme);
    form_->setRowVisible(host_label_, host_row);
    form_->setRowVisible(host_bar_, host_row);
    form_->setRowVisible(disk_label_, nvme_row);
    form_->setRowVisible(disk_bar_, nvme_row);
    showDevice(plan, config, target);
    if (host_row) showHost(plan, target);
    if (nvme_row) showNvme(plan, config);
    showVerdict(plan, config, target);
}

void OffloadTiers::showDevice(const MemoryPlan& plan, const RunConfig& config, const TargetMachine& target) {
    const int64_t limit = plan.limit_bytes;
    if (limit <= 0) {
        budget_label_->setText(tr("unknown"));
        budget_label_->setToolTip(tr("Set runtime.memory_limit_mb to plan against a budget."));
        emptyBar(budget_bar_, tr("no budget"));
        return;
    }
    budget_label_->setText(formatBytes(limit));
    if (config.runtime.memory_limit_mb > 0)
        budget_label_->setToolTip(tr("runtime.memory_limit_mb"));
    else if (target.kind != TargetKind::Here)
        budget_label_->setToolTip(tr("%1 (target.kind %2): a plan only; runtime says where a run trains")
                                      .arg(oneDevice(target), QString::fromStdString(config.target.kind)));
    else if (target.gpu)
        budget_label_->setToolTip(tr("the GPU's memory; runtime.memory_limit_mb sets a budget of your own"));
    else
        budget_label_->setToolTip(tr("the host's RAM divided among W = %1 ranks; runtime.memory_limit_mb "
                                     "sets a budget of your own")
                                      .arg(plan.world_size));
    // CPU ranks keep what offload moves to "host memory" in the same RAM: it counts here too.
    const bool shared = !target.gpu && plan.host_bytes > 0;
    const int64_t used = plan.peak_bytes + (shared ? plan.host_bytes : 0);
    const double share = double(used) / double(limit);
    fillBar(budget_bar_, share, plan.fits_device, shared ? formatShareOfBudget(share, tr("peak + host")) : formatShareOfBudget(share));
}

void OffloadTiers::showHost(const MemoryPlan& plan, const TargetMachine& target) {
    const int64_t rpn = std::max<int64_t>(1, plan.ranks_per_node);
    if (plan.host_bytes == 0) {
        host_label_->setText(tr("none offloaded"));
    } else {
        // With offload_dir on CPU ranks host memory holds only the slots a bucket is read into.
        const bool staging_only = plan.host_bytes == plan.host_staging_bytes;
        const QString bytes = staging_only ? tr("%1 (staging)").arg(formatBytes(plan.host_bytes)) : formatBytes(plan.host_bytes);
        host_label_->setText(rpn > 1 ? tr("%1 × %2 ranks").arg(bytes).arg(rpn) : bytes);
    }
    QStringList parts;
    const std::pair<QString, int64_t> kinds[] = {
        {tr("AdamW moments (fp32)"), plan.host_moment_bytes},
        {plan.weight_element_bytes == 2 ? tr("master weights (fp32; under offload all the bf16 shards too)")
                                         : tr("master weights (fp32)"),
         plan.host_master_bytes},
        {tr("gradient slice sums (fp32), which the device cannot keep"), plan.host_gradient_bytes},
        {tr("staging buffers copies and file reads pass through"), plan.host_staging_bytes},
        {plan.placement.boundaries == Tier::File ? tr("the buffers the window's boundaries are written from and read into")
                                                 : tr("the window's boundaries (the unit order), which the device cannot keep"),
         plan.host_boundary_bytes},
    };
    for (const auto& [what, bytes] : kinds)
        if (bytes > 0) parts << tr("%1: %2").arg(what, formatBytes(bytes));
    const QString per_rank = parts.isEmpty() ? tr("Nothing is offloaded (runtime.offload none).")
                                             : tr("A rank's host memory: %1.").arg(parts.join(QStringLiteral("; ")));
    if (!target.gpu) {
        // One memory: the share of the device's budget these bytes take.
        host_label_->setToolTip(per_rank + QLatin1Char(' ') +
                                tr("CPU ranks: host memory is the device's own, so these bytes count in the device "
                                   "budget above; offload_dir (the disk) frees them."));
        if (plan.limit_bytes > 0)
            fillBar(host_bar_, double(plan.host_bytes) / double(plan.limit_bytes), plan.fits_device,
                    tr("shares the device's memory: %1").arg(percent(double(plan.host_bytes) / double(plan.limit_bytes))));
        else
            emptyBar(host_bar_, tr("shares the device's memory"));
        host_bar_->setToolTip(host_label_->toolTip());
        return;
    }
    host_label_->setToolTip(per_rank + QLatin1Char(' ') +
                            tr("A node's %1 ranks share its host memory (%2).")
                                .arg(rpn)
                                .arg(plan.host_limit_bytes > 0 ? formatBytes(plan.host_limit_bytes) : tr("not checked")));
    const QString node = describeNodeShare(plan.host_bytes, rpn, plan.host_limit_bytes);
    if (plan.host_limit_bytes > 0)
        fillBar(host_bar_, double(plan.host_bytes * rpn) / double(plan.host_limit_bytes), plan.fits_host, node);
    else
        emptyBar(host_bar_, node);
}

void OffloadTiers::showNvme(const MemoryPlan& plan, const RunConfig& config) {
    const int64_t rpn = std::max<int64_t>(1, plan.ranks_per_node);
    const bool on_disk = onDisk(plan);
    if (!on_disk) {
        disk_label_->setText(tr("none (no offload_dir)"));
    } else {
        disk_label_->setText(rpn > 1 ? tr("%1 × %2 ranks").arg(formatBytes(plan.nvme_bytes)).arg(rpn)
                                     : formatBytes(plan.nvme_bytes));
    }
    const QString directory = QString::fromStdString(config.runtime.offload_dir);
    disk_label_->setToolTip(on_disk ? tr("This rank's offloaded state (AdamW moments, and the fp32 master where the "
                                         "device computes with other weights) in scratch files under %1.")
                                          .arg(directory)
                                    : tr("runtime.offload_dir is empty: nothing goes to disk."));
    if (plan.nvme_limit_bytes > 0) {
        fillBar(disk_bar_, double(plan.nvme_bytes * rpn) / double(plan.nvme_limit_bytes), plan.fits_nvme,
                describeNodeShare(plan.nvme_bytes, rpn, plan.nvme_limit_bytes));
    } else {
        // On this machine the limit is offload_dir's free space: none found (no such directory).
        fillBar(disk_bar_, on_disk && plan.nvme_bytes > 0 ? 1.0 : 0.0, plan.fits_nvme, tr("no free space found"));
    }
}

void OffloadTiers::showVerdict(const MemoryPlan& plan, const RunConfig& config, const TargetMachine& target) {
    const int64_t limit = plan.limit_bytes;
    auto say = [this](const QString& text, bool fits) {
        verdict_label_->setText(text);
        verdict_label_->setStyleSheet(QStringLiteral("color: %1;").arg((fits ? kFitsColor : kDoesNotFitColor).name()));
    };
    const int64_t rpn = std::max<int64_t>(1, plan.ranks_per_node);
    const int64_t used = plan.peak_bytes + (!target.gpu ? plan.host_bytes : 0);
    if (limit <= 0 && plan.fits) {
        verdict_label_->setText(tr("No budget to compare with: set runtime.memory_limit_mb."));
        verdict_label_->setStyleSheet(QString());
    } else if (!plan.fits_device) {
        say(tr("✗ Does not fit: %1 over the budget").arg(formatBytes(used - limit)), false);
    } else if (!plan.fits_host) {
        say(tr("✗ Host memory does not fit: %1 over a node's %2")
                .arg(formatBytes(plan.host_bytes * rpn - plan.host_limit_bytes), formatBytes(plan.host_limit_bytes)),
            false);
    } else if (!plan.fits_nvme) {
        say(plan.nvme_limit_bytes > 0
                ? tr("✗ NVMe does not fit: %1 over a node's %2")
                      .arg(formatBytes(plan.nvme_bytes * rpn - plan.nvme_limit_bytes), formatBytes(plan.nvme_limit_bytes))
                : tr("✗ NVMe does not fit: no free space found in %1").arg(QString::fromStdString(config.runtime.offload_dir)),
            false);
    } else {
        say(tr("✓ Fits: %1 to spare").arg(formatBytes(limit - used)), true);
    }
    if (limit <= 0 && plan.fits) {
        largest_fitting_label_->setText(missingValue());
        return;
    }
    const int64_t per_rank = plan.global_batch_size / std::max<int64_t>(plan.world_size, 1);
    const int64_t largest = plan.largest_fitting_micro_batch;
    largest_fitting_label_->setText(largest > 0 ? tr("m %1 × K %2").arg(largest).arg(per_rank / largest)
                                                : tr("none: even m 1 is too large"));
}

}  // namespace trainbench::gui
