// ExplorerTableModel: the batch explorer's rows as a table: layout, m, K, tokens/s, measured and planned peak, fits.
#include "batch/explorer_table_model.h"

#include <cmath>

#include <QBrush>
#include <QColor>
#include <QFont>

#include "common/display_format.h"

namespace trainbench::gui {

namespace {

const QColor kRecommendedBackground(222, 242, 222);
const QColor kDoesNotFitText(176, 0, 32);

QString dash() { return missingValue(); }

// "stage 3 · full", "stage 0 · EP 4": the sharding stage, the expert parallelism and the
// recomputation, when on.
QString layoutText(const ExploreRow& row) {
    QString stage = QStringLiteral("stage %1").arg(row.zero_stage);
    if (row.expert_parallel > 1) stage += QStringLiteral(" · EP %1").arg(row.expert_parallel);
    if (!isChoice(row.offload, Offload::None)) stage += QStringLiteral(" · offload %1").arg(QString::fromStdString(row.offload));
    return isChoice(row.activation_checkpointing, Recomputation::None)
               ? stage
               : QStringLiteral("%1 · %2").arg(stage, QString::fromStdString(row.activation_checkpointing));
}

}  // namespace

ExplorerTableModel::ExplorerTableModel(QObject* parent) : QAbstractTableModel(parent) {}

int ExplorerTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ExplorerTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ExplorerTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) return {};
    Q_ASSERT(checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid));
    const ExploreRow& row = rows_[static_cast<size_t>(index.row())];
    const bool recommended = index.row() == recommended_;
    const auto column = static_cast<Column>(index.column());

    switch (role) {
    case Qt::DisplayRole:
        switch (column) {
        case Layout: return layoutText(row);
        case MicroBatch: return QString::number(row.micro_batch_size);
        case Accumulation: return QString::number(row.gradient_accumulation_steps);
        // A row that ran out of memory has no rate worth showing: it never finished its steps.
        case TokensPerS: return row.fits ? formatGrouped(std::llround(row.tokens_per_s)) : dash();
        case MeasuredPeak: return row.measured_peak_bytes > 0 ? formatBytes(row.measured_peak_bytes) : dash();
        case PlannedPeak: return formatBytes(row.estimated_peak_bytes);
        case Fits:
            if (!row.fits) return row.note.empty() ? tr("no") : tr("no: %1").arg(QString::fromStdString(row.note));
            return recommended ? tr("yes ★") : tr("yes");
        case ColumnCount: break;
        }
        return {};
    case ValueRole:
        switch (column) {
        case Layout: return static_cast<qlonglong>(row.zero_stage);
        case MicroBatch: return static_cast<qlonglong>(row.micro_batch_size);
        case Accumulation: return static_cast<qlonglong>(row.gradient_accumulation_steps);
        case TokensPerS: return row.tokens_per_s;
        case MeasuredPeak: return static_cast<qlonglong>(row.measured_peak_bytes);
        case PlannedPeak: return static_cast<qlonglong>(row.estimated_peak_bytes);
        case Fits: return row.fits;
        case ColumnCount: break;
        }
        return {};
    case RecommendedRole:
        return recommended;
    case Qt::TextAlignmentRole:
        return static_cast<int>((column == Fits || column == Layout ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter);
    case Qt::FontRole:
        if (recommended) {
            QFont bold;
            bold.setBold(true);
            return bold;
        }
        return {};
    case Qt::BackgroundRole:
        return recommended ? QVariant(QBrush(kRecommendedBackground)) : QVariant();
    case Qt::ForegroundRole:
        return row.fits ? QVariant() : QVariant(QBrush(kDoesNotFitText));
    case Qt::ToolTipRole:
        if (!row.note.empty()) return QString::fromStdString(row.note);
        if (recommended)
            return tr("★ recommended: the fastest split whose measured peak leaves the safety margin of the "
                      "budget free.");
        return {};
    default:
        return {};
    }
}

QVariant ExplorerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Vertical || section < 0 || section >= ColumnCount) return {};
    if (role == Qt::DisplayRole) {
        switch (static_cast<Column>(section)) {
        case Layout: return tr("layout");
        case MicroBatch: return tr("m");
        case Accumulation: return tr("K");
        case TokensPerS: return tr("tokens / s");
        case MeasuredPeak: return tr("measured peak");
        case PlannedPeak: return tr("planned peak");
        case Fits: return tr("fits");
        case ColumnCount: break;
        }
    } else if (role == Qt::ToolTipRole) {
        switch (static_cast<Column>(section)) {
        case Layout: return tr("runtime.zero_stage, runtime.expert_parallel, runtime.offload and runtime.activation_checkpointing of the row");
        case MicroBatch: return tr("micro-batch size: sequences per forward pass");
        case Accumulation: return tr("gradient accumulation steps per optimizer step");
        case TokensPerS: return tr("training throughput, mean over the measured steps after the first");
        case MeasuredPeak: return tr("the most bytes any rank held while training this split");
        case PlannedPeak: return tr("the memory planner's estimate of the peak, from the config alone");
        case Fits: return tr("every rank finished every step within its memory");
        case ColumnCount: break;
        }
    } else if (role == Qt::TextAlignmentRole) {
        return static_cast<int>((section == Fits || section == Layout ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter);
    }
    return {};
}

void ExplorerTableModel::clear() {
    if (rows_.empty() && recommended_ < 0) return;
    beginResetModel();
    rows_.clear();
    recommended_ = -1;
    endResetModel();
}

void ExplorerTableModel::appendRow(const ExploreRow& row) {
    const int position = static_cast<int>(rows_.size());
    beginInsertRows(QModelIndex(), position, position);
    rows_.push_back(row);
    endInsertRows();
}

void ExplorerTableModel::setRecommended(int row) {
    if (row < -1 || row >= static_cast<int>(rows_.size())) row = -1;
    if (row == recommended_) return;
    const int previous = recommended_;
    recommended_ = row;
    for (int changed : {previous, row})
        if (changed >= 0) Q_EMIT dataChanged(index(changed, 0), index(changed, ColumnCount - 1));
}

}  // namespace trainbench::gui
