// DeviceCountTable: what fits a config on 1, 2, 4 ... 64 devices of its target's kind (adviseOnTarget at each count), and the published configs' claims answered the same way, as a table model.
#include "batch/device_count_table.h"

#include <algorithm>

#include <QColor>
#include <QFont>

#include "batch/plan_wording.h"
#include "common/display_format.h"

namespace trainbench::gui {

namespace {

QString noneText(const DeviceCountRow& row) {
    return row.advice.why_none.empty() ? QObject::tr("none, even at m 1")
                                       : QObject::tr("none: %1").arg(QString::fromStdString(row.advice.why_none));
}

}  // namespace

DeviceCountRow deviceCountRow(const RunConfig& config, int64_t devices) {
    DeviceCountRow row;
    row.devices = devices;
    RunConfig counted = config;
    counted.target.devices = devices;
    row.target = resolveTarget(counted);
    row.advice = adviseOnTarget(counted, row.target);
    if (row.fits()) {
        const RunConfig placed = configOnTarget(counted, row.target);
        row.time = predictStepTime(withLayout(placed, row.advice.layout.cheapest), row.advice.layout.cheapest_plan,
                                   row.target);
    }
    return row;
}

const std::vector<int64_t>& tableDeviceCounts() {
    static const std::vector<int64_t> counts{1, 2, 4, 8, 16, 32, 64};
    return counts;
}

RunConfig claimConfig(const PublishedConfig& published) {
    RunConfig config = published.config;
    const int64_t devices = std::max<int64_t>(1, published.devices);
    config.train.seq_len = 4096;
    config.runtime.dtype = "bf16";
    config.runtime.world_size = devices;
    config.runtime.memory_limit_mb = 0;
    config.train.micro_batch_size = 1;
    config.train.gradient_accumulation_steps = std::max<int64_t>(1, 64 / devices);
    config.train.global_batch_size.reset();
    config.target = TargetConfig{};
    config.target.kind = kClaimKind;
    config.target.devices = devices;
    return config;
}

QString describeClaim(const DeviceCountRow& row) {
    const QString head = QObject::tr("%1 on %2").arg(row.name, QString::fromStdString(row.target.label));
    if (!row.fits())
        return row.advice.why_none.empty()
                   ? QObject::tr("%1: does not fit, even at m 1.").arg(head)
                   : QObject::tr("%1: does not fit: %2.").arg(head, QString::fromStdString(row.advice.why_none));
    const MemoryLayout& layout = row.advice.layout.cheapest;
    return QObject::tr("%1: fits, %2, m %3 × K %4, %5 a step (%6).")
        .arg(head, describeMemoryLayout(layout, /*with_micro_batch=*/false))
        .arg(layout.micro_batch_size)
        .arg(row.advice.layout.cheapest_plan.gradient_accumulation_steps)
        .arg(formatDuration(row.time.step_s), QString::fromStdString(row.time.bound));
}

DeviceCountModel::DeviceCountModel(bool with_config_column, QObject* parent)
    : QAbstractTableModel(parent), with_config_(with_config_column) {}

void DeviceCountModel::setRows(std::vector<DeviceCountRow> rows) {
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
}

int DeviceCountModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DeviceCountModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount - (with_config_ ? 0 : 1);
}

DeviceCountModel::Column DeviceCountModel::columnAt(int section) const {
    return static_cast<Column>(section + (with_config_ ? 0 : 1));
}

QString DeviceCountModel::text(const DeviceCountRow& row, Column column) const {
    const MemoryLayout& layout = row.advice.layout.cheapest;
    const MemoryPlan& plan = row.advice.layout.cheapest_plan;
    const int64_t per_node = std::max<int64_t>(1, plan.ranks_per_node);
    switch (column) {
        case Config: return row.name;
        case Devices: return QString::number(row.devices);
        case Layout: return row.fits() ? describeMemoryLayout(layout, /*with_micro_batch=*/false) : noneText(row);
        case Split:
            return row.fits() ? QObject::tr("%1 × %2").arg(layout.micro_batch_size).arg(plan.gradient_accumulation_steps)
                              : QString();
        case Peak: return row.fits() ? formatBytes(plan.peak_bytes) : QString();
        case Host: return row.fits() && row.advice.offloaded ? formatBytes(plan.host_bytes * per_node) : QString();
        case Nvme: return row.fits() && plan.nvme_bytes > 0 ? formatBytes(plan.nvme_bytes * per_node) : QString();
        case Step:
            if (!row.fits()) return QString();
            // Figures the target lacks leave their terms out: the time is then a floor.
            return QObject::tr("%1%2 (%3)")
                .arg(row.time.unknown.empty() ? QString() : QStringLiteral("≥ "))
                .arg(formatDuration(row.time.step_s))
                .arg(QString::fromStdString(row.time.bound));
        case ColumnCount: break;
    }
    return QString();
}

QVariant DeviceCountModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const DeviceCountRow& row = rows_[static_cast<size_t>(index.row())];
    const Column column = columnAt(index.column());
    switch (role) {
        case Qt::DisplayRole: return text(row, column);
        case Qt::ToolTipRole:
            if (column == Devices) return QString::fromStdString(row.target.label);
            if (column == Step && row.fits()) return QString::fromStdString(describeStepTime(row.time));
            if (column == Layout && row.fits() && row.advice.offloaded)
                return QObject::tr("%1 (nothing fits without offload)").arg(text(row, column));
            return text(row, column);
        case Qt::TextAlignmentRole:
            return column == Layout || column == Config ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                                        : QVariant(Qt::AlignRight | Qt::AlignVCenter);
        case Qt::ForegroundRole:
            if (!row.fits() && column == Layout) return QColor(176, 0, 32);
            return {};
        default: return {};
    }
}

QVariant DeviceCountModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (columnAt(section)) {
        case Config: return QObject::tr("Config");
        case Devices: return QObject::tr("Devices");
        case Layout: return QObject::tr("Cheapest layout that fits");
        case Split: return QObject::tr("m × K");
        case Peak: return QObject::tr("Peak / device");
        case Host: return QObject::tr("Host / node");
        case Nvme: return QObject::tr("NVMe / node");
        case Step: return QObject::tr("Step (bound)");
        case ColumnCount: break;
    }
    return {};
}

}  // namespace trainbench::gui
