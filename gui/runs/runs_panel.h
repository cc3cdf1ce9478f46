// RunsPanel: the runs of the store as a filterable, multi-select list that refreshes itself while shown.
#pragma once

#include <QStringList>
#include <QTimer>
#include <QWidget>

class QAction;
class QLineEdit;
class QTableView;

namespace trainbench::gui {

class RunsFilterProxy;
class RunsModel;

// Widgets that tests drive carry object names: runsPanel, runsFilter (name or tag filter),
// runsView (the table, extended selection of whole rows). A double-click on a run, or the
// view's context-menu action watchRunAction ("Watch on Monitor", on the current row), asks
// for that run to be watched (watchRequested).
class RunsPanel : public QWidget {
    Q_OBJECT

public:
    // `store_folder`: the store to list (RunStore::defaultFolder() when empty).
    explicit RunsPanel(const QString& store_folder = QString(), QWidget* parent = nullptr);

    RunsModel* model() const { return model_; }
    // The ids of the selected runs, top to bottom.
    QStringList selectedRunIds() const;
    // Selects exactly these runs; ids not listed yet are selected as soon as a refresh
    // brings them.
    void selectRuns(const QStringList& run_ids);
    // The run id of the current row (the one last clicked, right-clicks included), or empty.
    QString currentRunId() const;
    QAction* watchAction() const { return watch_action_; }

    static constexpr int kRefreshIntervalMs = 2000;

Q_SIGNALS:
    void selectionChanged(const QStringList& run_ids);
    void watchRequested(const QString& run_id);

protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

private:
    // `store_read`: called after a refresh, so ids still missing are not in the store.
    void applyPendingSelection(bool store_read);

    RunsModel* model_ = nullptr;
    RunsFilterProxy* proxy_ = nullptr;
    QLineEdit* filter_ = nullptr;
    QTableView* view_ = nullptr;
    QAction* watch_action_ = nullptr;
    QTimer refresh_timer_;
    QStringList pending_selection_;
};

}  // namespace trainbench::gui
