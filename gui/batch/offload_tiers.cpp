// OffloadTiers: the planned memory box's lines on the tiers beyond the device: where offloaded AdamW moments went, host memory and disk (offload_dir) bytes per rank.
#include "batch/offload_tiers.h"

#include <QFormLayout>
#include <QLabel>

#include "common/display_format.h"

namespace trainbench::gui {

namespace {

bool offloaded(const RunConfig& config) { return isChoice(config.runtime.offload, Offload::Optimizer); }

QLabel* tierLabel(const QString& object_name, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setObjectName(object_name);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return label;
}

}  // namespace

OffloadTiers::OffloadTiers(QFormLayout* form, QWidget* box) : QObject(box), form_(form) {
    host_label_ = tierLabel(QStringLiteral("planHostLabel"), box);
    disk_label_ = tierLabel(QStringLiteral("planDiskLabel"), box);
    form_->addRow(tr("Host memory:"), host_label_);
    form_->addRow(tr("Disk (offload_dir):"), disk_label_);
    form_->setRowVisible(host_label_, false);
    form_->setRowVisible(disk_label_, false);
}

QString OffloadTiers::describeMoments(const MemoryPlan& plan, const RunConfig& config, const QString& on_device) {
    if (!offloaded(config)) return on_device;
    return config.runtime.offload_dir.empty()
               ? tr("%1 in host memory").arg(formatBytes(plan.optimizer_bytes))
               : tr("%1 on disk").arg(formatBytes(plan.optimizer_bytes));
}

void OffloadTiers::showPlan(const MemoryPlan& plan, const RunConfig& config) {
    const bool on_disk = offloaded(config) && !config.runtime.offload_dir.empty();
    form_->setRowVisible(host_label_, offloaded(config));
    form_->setRowVisible(disk_label_, on_disk);
    if (!offloaded(config)) return;
    // The offloaded moments are no longer in the device's peak; the rows below say where they wait.
    const QString directory = QString::fromStdString(config.runtime.offload_dir);
    host_label_->setText(on_disk ? tr("%1 (staging)").arg(formatBytes(plan.host_bytes)) : formatBytes(plan.host_bytes));
    host_label_->setToolTip(on_disk ? tr("Two staging slots of the widest bucket's slice: one is read from %1 while "
                                         "the other steps on the CPU.")
                                          .arg(directory)
                                    : tr("This rank's AdamW moments, stepped on the CPU between steps."));
    disk_label_->setText(formatBytes(plan.nvme_bytes));
    disk_label_->setToolTip(tr("This rank's AdamW moments in scratch files under %1.").arg(directory));
}

}  // namespace trainbench::gui
