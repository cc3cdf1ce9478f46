// DeviceCountTable: what fits a config on 1, 2, 4 ... 64 devices of its target's kind (adviseOnTarget at each count), and the published configs' claims answered the same way, as a table model.
#pragma once

#include <cstdint>
#include <vector>

#include <QAbstractTableModel>
#include <QString>

#include "trainbench/memory_plan.h"
#include "trainbench/run_config.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

namespace trainbench::gui {

// One count: the config with target.devices = devices (the kind, node and figures its own),
// resolved, and adviseOnTarget there. The step time is the cheapest layout's (predictStepTime of
// withLayout on the placed config, as the advice's sentence says it); zero when nothing fits.
struct DeviceCountRow {
    QString name;  // the config's, when rows of several configs share a table
    int64_t devices = 0;
    TargetMachine target;
    TargetAdvice advice;
    StepTimePlan time;
    bool fits() const { return advice.layout.cheapest.micro_batch_size > 0; }
};

DeviceCountRow deviceCountRow(const RunConfig& config, int64_t devices);
// 1, 2, 4, 8, 16, 32, 64.
const std::vector<int64_t>& tableDeviceCounts();

// A published config and the device count its guide names.
struct PublishedConfig {
    QString name;  // "config_16B"
    RunConfig config;
    int64_t devices = 1;
};
// The claims as the guides state them: seq_len 4096, bf16, a global batch of 64 sequences (m 1
// and K 64 / devices before the advice picks m), on nodes of H100 80 GB, what
// bench/offload_plan.sh plans.
RunConfig claimConfig(const PublishedConfig& published);
inline constexpr const char* kClaimKind = "h100-80";
// A claim's answer in a sentence: "config_16B on 1 x H100 80 GB: fits, stage 3, recompute full,
// offload all → host, m 8 × K 8, 22.5 s a step (PCIe)." or "…: does not fit: <why>."
QString describeClaim(const DeviceCountRow& row);

// Rows in columns: (Config,) Devices, Layout that fits, m × K, Peak / device, Host / node,
// NVMe / node, Step. A row where nothing fits names why in the layout column (its tooltip the
// whole reason); the rest of it stays empty.
class DeviceCountModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Config, Devices, Layout, Split, Peak, Host, Nvme, Step, ColumnCount };

    explicit DeviceCountModel(bool with_config_column, QObject* parent = nullptr);

    void setRows(std::vector<DeviceCountRow> rows);
    const std::vector<DeviceCountRow>& rows() const { return rows_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    // The column a model column shows (the Config column only when the model has it).
    Column columnAt(int section) const;

private:
    QString text(const DeviceCountRow& row, Column column) const;

    bool with_config_ = false;
    std::vector<DeviceCountRow> rows_;
};

}  // namespace trainbench::gui
