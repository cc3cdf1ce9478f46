// RunsPanel: the runs of the store as a filterable, multi-select list that refreshes itself while shown.
#include "runs/runs_panel.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include <QAction>
#include <QDialog>
#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QItemSelection>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QTableView>
#include <QVBoxLayout>

#include "common/display_format.h"
#include "runs/hf_export_dialog.h"
#include "runs/remote_runs_lister.h"
#include "runs/run_ref.h"
#include "runs/runs_filter_proxy.h"
#include "runs/runs_model.h"
#include "runs/store_reader.h"

namespace trainbench::gui {

namespace {

const char* const kErrorColor = "#b00020";
const char* const kDoneColor = "#2e7d32";
const char* const kQuietColor = "#666666";

}  // namespace

RunsPanel::RunsPanel(const QString& store_folder, QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("runsPanel"));
    model_ = new RunsModel(store_folder, this);
    proxy_ = new RunsFilterProxy(this);
    proxy_->setSourceModel(model_);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->setSpacing(6);
    filter_ = new QLineEdit(this);
    filter_->setObjectName(QStringLiteral("runsFilter"));
    filter_->setPlaceholderText(tr("Filter by name, tag or host"));
    filter_->setClearButtonEnabled(true);
    layout->addWidget(filter_);

    view_ = new QTableView(this);
    view_->setObjectName(QStringLiteral("runsView"));
    view_->setModel(proxy_);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view_->setAlternatingRowColors(true);
    view_->setWordWrap(false);
    view_->setTextElideMode(Qt::ElideRight);
    view_->verticalHeader()->hide();
    view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 8);
    view_->horizontalHeader()->setHighlightSections(false);
    view_->horizontalHeader()->setStretchLastSection(true);
    view_->setColumnWidth(RunsModel::Name, 86);
    view_->setColumnWidth(RunsModel::Status, 76);
    view_->setColumnWidth(RunsModel::Steps, 44);
    view_->setColumnWidth(RunsModel::FinalLoss, 64);
    view_->setColumnWidth(RunsModel::Created, 96);
    // Where a run lives matters once another machine's store is listed: then the host comes
    // second, after the name (addRemote).
    view_->setColumnWidth(RunsModel::Host, 72);
    view_->setColumnHidden(RunsModel::Host, true);
    // Newest first, as the store lists them; a header click sorts by another column.
    view_->setSortingEnabled(true);
    view_->sortByColumn(RunsModel::Created, Qt::DescendingOrder);
    layout->addWidget(view_, 1);

    // The view's actions are its context menu; a right-click makes its row current first.
    watch_action_ = new QAction(tr("Watch on Monitor"), view_);
    watch_action_->setObjectName(QStringLiteral("watchRunAction"));
    watch_action_->setToolTip(tr("Show this run's curves on the Training tab, growing while it runs"));
    view_->addAction(watch_action_);
    export_action_ = new QAction(tr("Export to Hugging Face…"), view_);
    export_action_->setObjectName(QStringLiteral("exportHfAction"));
    view_->addAction(export_action_);
    connect(export_action_, &QAction::triggered, this, &RunsPanel::exportWithDialog);
    // A menu of the view's actions that shows their tooltips: a disabled export says why.
    view_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(view_, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QMenu menu(this);
        menu.setToolTipsVisible(true);
        menu.addActions(view_->actions());
        menu.exec(view_->viewport()->mapToGlobal(pos));
    });
    connect(watch_action_, &QAction::triggered, this, [this] {
        const QString id = currentRunId();
        if (!id.isEmpty()) Q_EMIT watchRequested(id);
    });
    connect(view_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const QString id = index.data(RunsModel::RunIdRole).toString();
        if (!id.isEmpty()) Q_EMIT watchRequested(id);
    });

    auto* hint = new QLabel(tr("Select runs (Ctrl/Shift-click) to compare them; double-click one to watch it "
                               "on the Training tab."),
                            this);
    hint->setWordWrap(true);
    hint->setStyleSheet(QStringLiteral("color: #666;"));
    layout->addWidget(hint);

    remote_status_ = new QLabel(this);
    remote_status_->setObjectName(QStringLiteral("remoteStatusLabel"));
    remote_status_->setTextFormat(Qt::PlainText);
    remote_status_->setWordWrap(true);
    remote_status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    remote_status_->setStyleSheet(QStringLiteral("color: %1;").arg(QString::fromLatin1(kErrorColor)));
    remote_status_->hide();
    layout->addWidget(remote_status_);

    export_status_ = new QLabel(this);
    export_status_->setObjectName(QStringLiteral("exportStatusLabel"));
    export_status_->setTextFormat(Qt::PlainText);
    export_status_->setWordWrap(true);
    export_status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    export_status_->hide();
    layout->addWidget(export_status_);

    export_worker_ = new HfExportWorker(this);
    connect(export_worker_, &HfExportWorker::exported, this,
            [this](const QString& run_id, const HfExportSummary& summary) {
                export_dir_.clear();
                const QString files = summary.shards > 1 ? tr("%1 shards").arg(summary.shards) : tr("1 file");
                const QString message = tr("Exported step %1 of %2 to %3: %4 · %5 tensors · %6 in %7")
                                            .arg(summary.step)
                                            .arg(runLabel(run_id))
                                            .arg(QString::fromStdString(summary.dir),
                                                 QString::fromStdString(summary.architecture))
                                            .arg(summary.tensors)
                                            .arg(formatBytes(summary.bytes), files);
                showExportStatus(message, QString::fromLatin1(kDoneColor));
                updateExportAction();
                Q_EMIT exportFinished(true, message);
            });
    connect(export_worker_, &HfExportWorker::failed, this, &RunsPanel::exportFailed);
    // The store failed to answer where the checkpoints are: the export waiting for it ends.
    connect(model_, &RunsModel::refreshFailed, this, [this](const QString& error) {
        if (!waiting_for_folder_) return;
        waiting_for_folder_ = false;
        exportFailed(export_run_id_, error);
    });
    updateExportAction();

    connect(filter_, &QLineEdit::textChanged, proxy_, &RunsFilterProxy::setFilterFixedString);
    connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            [this] { Q_EMIT selectionChanged(selectedRunIds()); });
    connect(model_, &RunsModel::refreshed, this, [this] {
        applyPendingSelection(/*store_read=*/true);
        checkCurrentCheckpoints();  // a live run may have written one since
    });
    connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this] {
        updateExportAction();
        checkCurrentCheckpoints();
    });

    refresh_timer_.setInterval(kRefreshIntervalMs);
    connect(&refresh_timer_, &QTimer::timeout, model_, &RunsModel::refresh);
    remote_timer_.setInterval(kRemoteRefreshIntervalMs);
    connect(&remote_timer_, &QTimer::timeout, this, [this] {
        for (RemoteRunsLister* lister : remotes_) lister->refresh();
    });
    model_->refresh();
}

void RunsPanel::addRemote(const RemoteLocation& location) {
    rememberRemote(location);
    if (view_->isColumnHidden(RunsModel::Host)) {
        view_->setColumnHidden(RunsModel::Host, false);
        view_->horizontalHeader()->moveSection(view_->horizontalHeader()->visualIndex(RunsModel::Host), 1);
    }
    for (auto it = remotes_.begin(); it != remotes_.end(); ++it) {
        if ((*it)->location().label() != location.label()) continue;
        if ((*it)->location() == location) {
            (*it)->refresh();
            return;
        }
        // The same store with another CLI path (a corrected one): listed afresh with it.
        (*it)->deleteLater();
        remotes_.erase(it);
        break;
    }
    auto* lister = new RemoteRunsLister(location, this);
    remotes_.push_back(lister);
    const QString label = location.label();
    connect(lister, &RemoteRunsLister::listed, this, [this, lister, label](const std::vector<RunRecord>& runs) {
        model_->setRemoteRuns(lister->location(), runs);
        applyPendingSelection(/*store_read=*/false);
        remote_failures_.remove(label);
        showRemoteStatus();
        Q_EMIT remoteListed(label, QString());
    });
    connect(lister, &RemoteRunsLister::failed, this, [this, label](const QString& message) {
        remote_failures_.insert(label, message);
        showRemoteStatus();
        Q_EMIT remoteListed(label, message);
    });
    lister->refresh();
    if (isVisible()) remote_timer_.start();
}

void RunsPanel::showRemoteStatus() {
    QStringList lines;
    for (auto it = remote_failures_.cbegin(); it != remote_failures_.cend(); ++it)
        lines << tr("%1: %2").arg(it.key(), it.value());
    remote_status_->setText(lines.join(QLatin1Char('\n')));
    remote_status_->setVisible(!lines.isEmpty());
}

QStringList RunsPanel::selectedRunIds() const {
    QModelIndexList rows = view_->selectionModel()->selectedRows();
    std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
    QStringList ids;
    for (const QModelIndex& row : rows) ids << row.data(RunsModel::RunIdRole).toString();
    return ids;
}

QString RunsPanel::currentRunId() const {
    const QModelIndex current = view_->currentIndex();
    return current.isValid() ? current.data(RunsModel::RunIdRole).toString() : QString();
}

void RunsPanel::selectRuns(const QStringList& run_ids) {
    pending_selection_ = run_ids;
    applyPendingSelection(/*store_read=*/false);
}

void RunsPanel::applyPendingSelection(bool store_read) {
    if (pending_selection_.isEmpty()) return;
    QItemSelection selection;
    bool all_found = true;
    for (const QString& id : pending_selection_) {
        const int source_row = model_->rowOf(id);
        const QModelIndex row = source_row < 0 ? QModelIndex() : proxy_->mapFromSource(model_->index(source_row, 0));
        if (!row.isValid()) {
            all_found = false;
            continue;
        }
        selection.select(row, row.siblingAtColumn(RunsModel::ColumnCount - 1));
    }
    view_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    if (!selection.isEmpty()) view_->scrollTo(selection.indexes().front());
    // An id the store still lacks after a read is not coming: stop overriding the user's clicks.
    if (all_found || store_read) pending_selection_.clear();
}

void RunsPanel::checkCurrentCheckpoints() {
    const QString id = currentRunId();
    if (id.isEmpty()) {
        updateExportAction();
        return;
    }
    model_->reader()->post<Checkpoints>(
        [id](RunStore& store) {
            Checkpoints found;
            found.run_id = id;
            found.folder = QString::fromStdString(store.checkpointFolder(id.toStdString()));
            // A recorded checkpoint may have been pruned since: only those on disk count.
            for (const CheckpointRecord& record : store.checkpoints(id.toStdString())) {
                std::error_code error;
                if (std::filesystem::is_directory(record.path, error))
                    found.newest_step = std::max(found.newest_step, record.step);
            }
            return found;
        },
        [this](Checkpoints found) {
            if (found.run_id != currentRunId()) return;  // the current run changed meanwhile
            checkpoints_ = std::move(found);
            updateExportAction();
        });
}

void RunsPanel::updateExportAction() {
    const QString id = currentRunId();
    bool enabled = false;
    QString why;
    if (isExporting()) {
        why = tr("An export is running (to %1); one at a time.").arg(export_dir_);
    } else if (id.isEmpty()) {
        why = tr("Select a run to export its checkpoint.");
    } else if (const RunRef ref = resolveRunRef(id); ref.remote) {
        why = tr("This run's checkpoints are on %1: export there with trainbench-cli export-hf %2.")
                  .arg(ref.remote->hostLabel(), ref.run_id);
    } else if (checkpoints_.run_id != id) {
        why = tr("Looking for the run's checkpoints…");
    } else if (checkpoints_.newest_step <= 0) {
        why = tr("This run has no checkpoint on disk to export: a run writes one every train.checkpoint_every steps "
                 "and when it ends.");
    } else {
        enabled = true;
        why = tr("Write the step-%1 checkpoint as a Hugging Face directory (config.json, model.safetensors, the "
                 "tokenizer) that transformers, vLLM and SGLang load.")
                  .arg(checkpoints_.newest_step);
    }
    export_action_->setEnabled(enabled);
    export_action_->setToolTip(why);
    export_action_->setStatusTip(why);
}

bool RunsPanel::isExporting() const {
    return !export_dir_.isEmpty();
}

QString RunsPanel::runLabel(const QString& run_id) const {
    const int row = model_->rowOf(run_id);
    if (row < 0) return run_id;
    const RunRecord& run = model_->run(row);
    return run.name.empty() || run.name == run.run_id ? run_id
                                                      : tr("%1 (%2)").arg(QString::fromStdString(run.name), run_id);
}

void RunsPanel::exportWithDialog() {
    const QString id = currentRunId();
    if (id.isEmpty() || checkpoints_.run_id != id || checkpoints_.newest_step <= 0 || isExporting()) return;
    const int row = model_->rowOf(id);
    const QString name = row >= 0 && !model_->run(row).name.empty() ? QString::fromStdString(model_->run(row).name) : id;
    const QString parent = last_export_parent_.isEmpty() ? QDir::homePath() : last_export_parent_;
    HfExportDialog dialog(runLabel(id), checkpoints_.newest_step, HfExportDialog::freshFolder(parent, name), this);
    if (dialog.exec() != QDialog::Accepted) return;
    const HfExportParams params = dialog.params();
    last_export_parent_ = QFileInfo(params.out_dir).absolutePath();
    exportRun(id, params);
}

bool RunsPanel::exportRun(const QString& run_id, HfExportParams params) {
    if (isExporting() || run_id.isEmpty() || params.out_dir.isEmpty()) return false;
    export_dir_ = params.out_dir;
    showExportStatus(tr("Exporting %1 to %2…").arg(runLabel(run_id), params.out_dir), QString::fromLatin1(kQuietColor));
    updateExportAction();
    // The checkpoint folder is the store's to say; the worker starts once it has.
    params.run_id = run_id;
    export_run_id_ = run_id;
    waiting_for_folder_ = true;
    model_->reader()->post<QString>(
        [id = run_id.toStdString()](RunStore& store) { return QString::fromStdString(store.checkpointFolder(id)); },
        [this, params](QString folder) mutable {
            waiting_for_folder_ = false;
            params.checkpoint_folder = std::move(folder);
            export_worker_->start(std::move(params));
        });
    return true;
}

void RunsPanel::exportFailed(const QString& run_id, const QString& error) {
    export_dir_.clear();
    const QString message = tr("Export of %1 failed: %2").arg(runLabel(run_id), error);
    showExportStatus(message, QString::fromLatin1(kErrorColor));
    updateExportAction();
    Q_EMIT exportFinished(false, message);
}

void RunsPanel::showExportStatus(const QString& text, const QString& color) {
    export_status_->setText(text);
    export_status_->setStyleSheet(QStringLiteral("color: %1;").arg(color));
    export_status_->show();
}

void RunsPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    model_->refresh();
    refresh_timer_.start();
    if (!remotes_.empty()) remote_timer_.start();
}

void RunsPanel::hideEvent(QHideEvent* event) {
    QWidget::hideEvent(event);
    refresh_timer_.stop();
    remote_timer_.stop();
}

}  // namespace trainbench::gui
