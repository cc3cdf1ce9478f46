// RunsModel: the runs of the store as a table (name, status, steps, final loss, created, tags), newest first.
#include "runs/runs_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <QColor>
#include <QDateTime>

#include "common/display_format.h"
#include "runs/run_ref.h"
#include "runs/store_reader.h"

namespace trainbench::gui {

namespace {

// Short enough for a narrow list; the tooltip has the full local time.
QString createdText(const std::string& iso, const QString& format) {
    const QDateTime time = QDateTime::fromString(QString::fromStdString(iso), Qt::ISODate);
    if (!time.isValid()) return QString::fromStdString(iso);
    return time.toLocalTime().toString(format);
}

QColor statusColor(const std::string& status) {
    if (status == "running") return QColor(31, 119, 180);
    if (status == "failed") return QColor(176, 0, 32);
    if (status == "interrupted" || status == "stopped") return QColor(150, 100, 0);
    return QColor();
}

}  // namespace

RunsModel::RunsModel(QString folder, QObject* parent) : QAbstractTableModel(parent) {
    if (folder.isEmpty()) folder = QString::fromStdString(RunStore::defaultFolder());
    reader_ = new StoreReader(std::move(folder), this);
    connect(reader_, &StoreReader::failed, this, [this](const QString& message) {
        loading_ = false;
        Q_EMIT refreshFailed(message);
    });
}

RunsModel::~RunsModel() = default;

int RunsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int RunsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const RunRecord& run = runs_[static_cast<size_t>(index.row())];
    if (role == RunIdRole) return QString::fromStdString(run.run_id);
    const auto column = static_cast<Column>(index.column());
    if (role == SortRole) {
        switch (column) {
        case Steps: return QVariant::fromValue<qlonglong>(run.steps);
        case FinalLoss: return run.final_loss ? QVariant(*run.final_loss) : QVariant();
        case Created: return QString::fromStdString(run.created);
        default: return data(index, Qt::DisplayRole);
        }
    }
    if (role == Qt::DisplayRole) {
        switch (column) {
        case Name: {
            const RunRef ref = resolveRunRef(QString::fromStdString(run.run_id));
            return run.name.empty() ? ref.run_id : QString::fromStdString(run.name);
        }
        case Host: {
            const RunRef ref = resolveRunRef(QString::fromStdString(run.run_id));
            return ref.remote ? ref.remote->hostLabel() : tr("local");
        }
        case Status: return QString::fromStdString(run.status);
        case Steps: return QVariant::fromValue<qlonglong>(run.steps);
        case FinalLoss:
            return run.final_loss && std::isfinite(*run.final_loss) ? QString::number(*run.final_loss, 'f', 4)
                                                                    : missingValue();
        case Created: return createdText(run.created, QStringLiteral("MM-dd HH:mm"));
        case Tags: return QString::fromStdString(run.tags);
        case ColumnCount: break;
        }
        return {};
    }
    if (role == Qt::ToolTipRole && column == Host) {
        const RunRef ref = resolveRunRef(QString::fromStdString(run.run_id));
        return ref.remote ? tr("on %1").arg(ref.remote->label()) : tr("in this machine's store");
    }
    if (role == Qt::ToolTipRole && column == Name) {
        const RunRef ref = resolveRunRef(QString::fromStdString(run.run_id));
        if (ref.remote)
            return tr("%1\nid %2\non %3").arg(QString::fromStdString(run.name), ref.run_id, ref.remote->label());
        return tr("%1\nid %2").arg(QString::fromStdString(run.name), QString::fromStdString(run.run_id));
    }
    if (role == Qt::ToolTipRole && column == Status && !run.error.empty()) return QString::fromStdString(run.error);
    if (role == Qt::ToolTipRole && column == Created)
        return createdText(run.created, QStringLiteral("yyyy-MM-dd HH:mm:ss"));
    if (role == Qt::ForegroundRole && column == Status) {
        const QColor color = statusColor(run.status);
        return color.isValid() ? QVariant(color) : QVariant();
    }
    if (role == Qt::TextAlignmentRole && (column == Steps || column == FinalLoss))
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (static_cast<Column>(section)) {
    case Name: return tr("Name");
    case Status: return tr("Status");
    case Steps: return tr("Steps");
    case FinalLoss: return tr("Final loss");
    case Created: return tr("Created");
    case Tags: return tr("Tags");
    case Host: return tr("Host");
    case ColumnCount: break;
    }
    return {};
}

void RunsModel::refresh() {
    if (loading_) {
        refresh_again_ = true;
        return;
    }
    loading_ = true;
    reader_->post<std::vector<RunRecord>>([](RunStore& store) { return store.listRuns(); },
                                          [this](std::vector<RunRecord> runs) {
                                              loading_ = false;
                                              loaded_once_ = true;
                                              setRuns(std::move(runs));
                                              Q_EMIT refreshed();
                                              if (std::exchange(refresh_again_, false)) refresh();
                                          });
}

bool RunsModel::sameRow(const RunRecord& a, const RunRecord& b) {
    return a.name == b.name && a.status == b.status && a.steps == b.steps && a.final_loss == b.final_loss &&
           a.created == b.created && a.tags == b.tags && a.error == b.error;
}

void RunsModel::setRuns(std::vector<RunRecord> runs) {
    local_ = std::move(runs);
    mergeRows();
}

void RunsModel::setRemoteRuns(const RemoteLocation& location, std::vector<RunRecord> runs) {
    for (RunRecord& run : runs) run.run_id = runRefKey(location, QString::fromStdString(run.run_id)).toStdString();
    const QString label = location.label();
    auto it = std::find_if(remote_.begin(), remote_.end(), [&](const auto& entry) { return entry.first == label; });
    if (it == remote_.end()) remote_.emplace_back(label, std::move(runs));
    else it->second = std::move(runs);
    mergeRows();
}

QStringList RunsModel::remoteLabels() const {
    QStringList labels;
    for (const auto& entry : remote_) labels << entry.first;
    return labels;
}

void RunsModel::mergeRows() {
    std::vector<RunRecord> all = local_;
    if (!remote_.empty()) {
        for (const auto& entry : remote_) all.insert(all.end(), entry.second.begin(), entry.second.end());
        // ISO 8601 times sort as text.
        std::stable_sort(all.begin(), all.end(),
                         [](const RunRecord& a, const RunRecord& b) { return a.created > b.created; });
    }
    merge(std::move(all));
}

void RunsModel::merge(std::vector<RunRecord> runs) {
    auto contains = [](const std::vector<RunRecord>& list, const std::string& run_id) {
        return std::any_of(list.begin(), list.end(), [&](const RunRecord& r) { return r.run_id == run_id; });
    };
    // Deleted runs go first, from the bottom, so the rows above keep their numbers meanwhile.
    for (int row = static_cast<int>(runs_.size()) - 1; row >= 0; --row) {
        if (contains(runs, runs_[static_cast<size_t>(row)].run_id)) continue;
        beginRemoveRows(QModelIndex(), row, row);
        runs_.erase(runs_.begin() + row);
        endRemoveRows();
    }
    // Then row by row: the same run updated in place, a new one inserted, a moved one moved.
    for (int row = 0; row < static_cast<int>(runs.size()); ++row) {
        RunRecord& fresh = runs[static_cast<size_t>(row)];
        if (row < static_cast<int>(runs_.size()) && runs_[static_cast<size_t>(row)].run_id == fresh.run_id) {
            if (!sameRow(runs_[static_cast<size_t>(row)], fresh)) {
                runs_[static_cast<size_t>(row)] = std::move(fresh);
                Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
            } else {
                runs_[static_cast<size_t>(row)] = std::move(fresh);  // config, notes: not shown
            }
            continue;
        }
        const int old_row = rowOf(QString::fromStdString(fresh.run_id));
        if (old_row < 0) {
            beginInsertRows(QModelIndex(), row, row);
            runs_.insert(runs_.begin() + row, std::move(fresh));
            endInsertRows();
        } else {
            beginMoveRows(QModelIndex(), old_row, old_row, QModelIndex(), row);
            RunRecord moved = std::move(runs_[static_cast<size_t>(old_row)]);
            runs_.erase(runs_.begin() + old_row);
            runs_.insert(runs_.begin() + row, std::move(moved));
            endMoveRows();
            if (!sameRow(runs_[static_cast<size_t>(row)], fresh)) {
                runs_[static_cast<size_t>(row)] = std::move(fresh);
                Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
            }
        }
    }
}

int RunsModel::rowOf(const QString& run_id) const {
    const std::string id = run_id.toStdString();
    for (size_t row = 0; row < runs_.size(); ++row)
        if (runs_[row].run_id == id) return static_cast<int>(row);
    return -1;
}

const QString& RunsModel::storeFolder() const {
    return reader_->folder();
}

}  // namespace trainbench::gui
