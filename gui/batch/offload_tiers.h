// OffloadTiers: the planned memory box's three tiers as bars against their budgets: the device's peak, a node's host memory, a node's NVMe (offload_dir); the verdict over all three.
#pragma once

#include <QObject>
#include <QString>

#include <utility>

#include "trainbench/memory_plan.h"
#include "trainbench/run_config.h"
#include "trainbench/target_machine.h"

class QFormLayout;
class QLabel;
class QProgressBar;

namespace trainbench::gui {

// Rows appended to the memory box's form, each tier a value and a bar under it:
// - "Device budget:" the budget a rank's peak is planned against (MemoryPlan::limit_bytes), its
//   bar the peak's share; on CPU ranks, whose host memory is the device's own, the peak and what
//   offload keeps in host memory together (as MemoryPlan::fits counts them);
// - "Host memory:" MemoryPlan::host_bytes a rank, its bar host_bytes x ranks_per_node against a
//   node's host_limit_bytes (on CPU ranks: the share of the device's budget it takes);
// - "NVMe (offload_dir):" MemoryPlan::nvme_bytes a rank, its bar nvme_bytes x ranks_per_node
//   against a node's nvme_limit_bytes;
// then the verdict (which tier does not fit, by how much) and the largest micro-batch that fits
// every tier. The host row shows while runtime.offload is not none, or while the target's advice
// needs offload (its bar then says what a node has); the NVMe row likewise with offload_dir set,
// or an advised layout on NVMe.
//
// Widgets that tests read carry object names: planBudgetLabel, planBudgetBar, planHostLabel,
// planHostBar, planDiskLabel, planDiskBar, planVerdictLabel, largestFittingLabel.
class OffloadTiers : public QObject {
    Q_OBJECT

public:
    // Appends the rows to `form`, whose labels are children of `box`.
    OffloadTiers(QFormLayout* form, QWidget* box);

    // `plan` is planOnTarget(config, target); `advice` adviseOnTarget's for the same.
    void showPlan(const MemoryPlan& plan, const RunConfig& config, const TargetMachine& target,
                  const TargetAdvice& advice);

    // The AdamW moments row: `on_device` (the bytes, with their shard when sharded) while they
    // stay on the device; where they went when offloaded ("452 MiB in host memory", "452 MiB on disk": no longer in the peak).
    static QString describeMoments(const MemoryPlan& plan, const RunConfig& config, const QString& on_device);
    // The gradient sums row, likewise: `on_device`, or where they are summed ("on the host (…)",
    // "on disk (…)"), with the tooltip that says why.
    static std::pair<QString, QString> describeGradients(const MemoryPlan& plan, const QString& on_device);
    // The unit order's boundaries (each block's input per micro-batch, the gradients handed down
    // between units) and where they wait, with why; empty under the micro-batch order.
    static std::pair<QString, QString> describeBoundaries(const MemoryPlan& plan);
    // A node's share of a tier, as its bar reads: "235.6 GiB of 2.0 TiB a node (11.5 %)", with
    // "8 ranks: " before it when a node holds more than one.
    static QString describeNodeShare(int64_t bytes_per_rank, int64_t ranks_per_node, int64_t limit_per_node);

private:
    void showDevice(const MemoryPlan& plan, const RunConfig& config, const TargetMachine& target);
    void showHost(const MemoryPlan& plan, const TargetMachine& target);
    void showNvme(const MemoryPlan& plan, const RunConfig& config);
    void showVerdict(const MemoryPlan& plan, const RunConfig& config, const TargetMachine& target);

    QFormLayout* form_ = nullptr;
    QLabel* budget_label_ = nullptr;
    QProgressBar* budget_bar_ = nullptr;
    QLabel* host_label_ = nullptr;
    QProgressBar* host_bar_ = nullptr;
    QLabel* disk_label_ = nullptr;
    QProgressBar* disk_bar_ = nullptr;
    QLabel* verdict_label_ = nullptr;
    QLabel* largest_fitting_label_ = nullptr;
};

}  // namespace trainbench::gui
