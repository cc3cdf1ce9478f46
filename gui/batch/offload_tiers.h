// OffloadTiers: the planned memory box's lines on the tiers beyond the device: where offloaded AdamW moments went, host memory and disk (offload_dir) bytes per rank.
#pragma once

#include <QObject>
#include <QString>

#include "trainbench/memory_plan.h"
#include "trainbench/run_config.h"

class QFormLayout;
class QLabel;

namespace trainbench::gui {

// Two rows appended to the memory box's form, shown while runtime.offload is "optimizer":
// "Host memory:" (MemoryPlan::host_bytes: the moments themselves, or with offload_dir the two
// staging slots a bucket is read into) and "Disk (offload_dir):" (MemoryPlan::nvme_bytes, shown
// with offload_dir only). The peak and its bar above stay the device's.
//
// Labels that tests read carry object names: planHostLabel, planDiskLabel.
class OffloadTiers : public QObject {
    Q_OBJECT

public:
    // Appends the rows to `form`, whose labels are children of `box`.
    OffloadTiers(QFormLayout* form, QWidget* box);

    void showPlan(const MemoryPlan& plan, const RunConfig& config);

    // The AdamW moments row: `on_device` (the bytes, with their shard when sharded) while they
    // stay on the device; where they went when offloaded ("452 MiB in host memory", "452 MiB on disk": no longer in the peak).
    static QString describeMoments(const MemoryPlan& plan, const RunConfig& config, const QString& on_device);

private:
    QFormLayout* form_ = nullptr;
    QLabel* host_label_ = nullptr;
    QLabel* disk_label_ = nullptr;
};

}  // namespace trainbench::gui
