// RunQueue: the configs waiting to run, running and run, as the table of the Queue tab.
#include "queue/run_queue.h"

#include <cmath>
#include <limits>

#include <QColor>

#include "common/display_format.h"

namespace trainbench::gui {

namespace {

QColor stateColor(RunQueue::State state) {
    switch (state) {
    case RunQueue::State::Running: return QColor(31, 119, 180);
    case RunQueue::State::Failed: return QColor(176, 0, 32);
    case RunQueue::State::Stopped: return QColor(150, 100, 0);
    default: return QColor();
    }
}

bool hasEnded(RunQueue::State state) {
    return state == RunQueue::State::Completed || state == RunQueue::State::Failed || state == RunQueue::State::Stopped;
}

}  // namespace

RunQueue::RunQueue(QObject* parent) : QAbstractTableModel(parent) {}

int RunQueue::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(jobs_.size());
}

int RunQueue::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QString RunQueue::stateName(State state) {
    switch (state) {
    case State::Waiting: return tr("waiting");
    case State::Running: return tr("running");
    case State::Completed: return tr("completed");
    case State::Failed: return tr("failed");
    case State::Stopped: return tr("stopped");
    }
    return {};
}

QVariant RunQueue::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const Job& job = jobs_[static_cast<size_t>(index.row())];
    const auto column = static_cast<Column>(index.column());
    if (role == Qt::DisplayRole) {
        switch (column) {
        case NameColumn: return job.name;
        case SettingsColumn: return job.settings;
        case BatchColumn:
            return QStringLiteral("%1×%2×%3 = %4")
                .arg(job.config.train.micro_batch_size)
                .arg(job.config.train.gradient_accumulation_steps)
                .arg(job.config.runtime.world_size)
                .arg(job.config.globalBatch());
        case StatusColumn: return stateName(job.state);
        case LossColumn:
            return hasEnded(job.state) && std::isfinite(job.final_loss) ? QString::number(job.final_loss, 'f', 4)
                                                                         : missingValue();
        case RunIdColumn: return job.run_id;
        case ColumnCount: break;
        }
        return {};
    }
    if (role == Qt::ForegroundRole && column == StatusColumn) {
        const QColor color = stateColor(job.state);
        return color.isValid() ? QVariant(color) : QVariant();
    }
    if (role == Qt::ToolTipRole && column == StatusColumn && !job.message.isEmpty()) return job.message;
    if (role == Qt::TextAlignmentRole && column == LossColumn)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant RunQueue::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (static_cast<Column>(section)) {
    case NameColumn: return tr("Name");
    case SettingsColumn: return tr("Grid point");
    case BatchColumn: return tr("m×K×W = B");
    case StatusColumn: return tr("Status");
    case LossColumn: return tr("Final loss");
    case RunIdColumn: return tr("Run id");
    case ColumnCount: break;
    }
    return {};
}

void RunQueue::enqueue(const QString& name, const QString& settings, const RunConfig& config) {
    const int row = static_cast<int>(jobs_.size());
    beginInsertRows(QModelIndex(), row, row);
    Job job;
    job.name = name;
    job.settings = settings;
    job.config = config;
    job.final_loss = std::numeric_limits<double>::quiet_NaN();
    jobs_.push_back(std::move(job));
    endInsertRows();
    Q_EMIT jobsChanged();
}

int RunQueue::countIn(State state) const {
    int count = 0;
    for (const Job& job : jobs_) count += job.state == state ? 1 : 0;
    return count;
}

int RunQueue::nextWaiting() const {
    for (size_t i = 0; i < jobs_.size(); ++i)
        if (jobs_[i].state == State::Waiting) return static_cast<int>(i);
    return -1;
}

int RunQueue::running() const {
    for (size_t i = 0; i < jobs_.size(); ++i)
        if (jobs_[i].state == State::Running) return static_cast<int>(i);
    return -1;
}

void RunQueue::markStarted(int row, const QString& run_id) {
    Job& job = jobs_.at(static_cast<size_t>(row));
    job.state = State::Running;
    job.run_id = run_id;
    rowChanged(row);
}

void RunQueue::markFinished(int row, const RunSummary& summary) {
    Job& job = jobs_.at(static_cast<size_t>(row));
    switch (summary.status) {
    case RunStatus::Completed: job.state = State::Completed; break;
    case RunStatus::Failed: job.state = State::Failed; break;
    default: job.state = State::Stopped; break;
    }
    job.final_loss = summary.final_loss;
    job.message = QString::fromStdString(summary.error);
    rowChanged(row);
}

void RunQueue::markRefused(int row, const QString& message) {
    Job& job = jobs_.at(static_cast<size_t>(row));
    job.state = State::Failed;
    job.message = message;
    rowChanged(row);
}

bool RunQueue::removeWaiting(int row) {
    if (row < 0 || row >= rowCount() || jobs_[static_cast<size_t>(row)].state != State::Waiting) return false;
    beginRemoveRows(QModelIndex(), row, row);
    jobs_.erase(jobs_.begin() + row);
    endRemoveRows();
    Q_EMIT jobsChanged();
    return true;
}

void RunQueue::clearEnded() {
    for (int row = rowCount() - 1; row >= 0; --row) {
        if (!hasEnded(jobs_[static_cast<size_t>(row)].state)) continue;
        beginRemoveRows(QModelIndex(), row, row);
        jobs_.erase(jobs_.begin() + row);
        endRemoveRows();
    }
    Q_EMIT jobsChanged();
}

QStringList RunQueue::endedRunIds() const {
    QStringList ids;
    for (const Job& job : jobs_)
        if (hasEnded(job.state) && !job.run_id.isEmpty()) ids << job.run_id;
    return ids;
}

void RunQueue::rowChanged(int row) {
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
    Q_EMIT jobsChanged();
}

}  // namespace trainbench::gui
