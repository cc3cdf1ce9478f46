// RunsPanel: the runs of the store as a filterable, multi-select list that refreshes itself while shown.
#include "runs/runs_panel.h"

#include <algorithm>

#include <QAction>
#include <QHeaderView>
#include <QItemSelection>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QTableView>
#include <QVBoxLayout>

#include "runs/runs_filter_proxy.h"
#include "runs/runs_model.h"

namespace trainbench::gui {

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
    filter_->setPlaceholderText(tr("Filter by name or tag"));
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
    // Newest first, as the store lists them; a header click sorts by another column.
    view_->setSortingEnabled(true);
    view_->sortByColumn(RunsModel::Created, Qt::DescendingOrder);
    layout->addWidget(view_, 1);

    // The view's actions are its context menu; a right-click makes its row current first.
    watch_action_ = new QAction(tr("Watch on Monitor"), view_);
    watch_action_->setObjectName(QStringLiteral("watchRunAction"));
    watch_action_->setToolTip(tr("Show this run's curves on the Training tab, growing while it runs"));
    view_->addAction(watch_action_);
    view_->setContextMenuPolicy(Qt::ActionsContextMenu);
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

    connect(filter_, &QLineEdit::textChanged, proxy_, &RunsFilterProxy::setFilterFixedString);
    connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            [this] { Q_EMIT selectionChanged(selectedRunIds()); });
    connect(model_, &RunsModel::refreshed, this, [this] { applyPendingSelection(/*store_read=*/true); });

    refresh_timer_.setInterval(kRefreshIntervalMs);
    connect(&refresh_timer_, &QTimer::timeout, model_, &RunsModel::refresh);
    model_->refresh();
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

void RunsPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    model_->refresh();
    refresh_timer_.start();
}

void RunsPanel::hideEvent(QHideEvent* event) {
    QWidget::hideEvent(event);
    refresh_timer_.stop();
}

}  // namespace trainbench::gui
