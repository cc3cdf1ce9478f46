// RunsPanel: the runs of the store as a filterable, multi-select list that refreshes itself while shown.
#pragma once

#include <cstdint>
#include <vector>

#include <QMap>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include "runs/hf_export_worker.h"

class QAction;
class QLabel;
class QLineEdit;
class QTableView;

namespace trainbench::gui {

class RemoteRunsLister;
class RunsFilterProxy;
class RunsModel;
struct RemoteLocation;

// Widgets that tests drive carry object names: runsPanel, runsFilter (name, tag or host filter),
// runsView (the table, extended selection of whole rows). A double-click on a run, or the
// view's context-menu action watchRunAction ("Watch on Monitor", on the current row), asks
// for that run to be watched (watchRequested).
//
// The context menu's exportHfAction ("Export to Hugging Face…") writes the current run's
// newest checkpoint as a Hugging Face directory (HfExportDialog, then HfExportWorker). It is
// enabled only for a run with a checkpoint on disk, its tooltip saying why not otherwise; the
// store is asked which checkpoints the current run has when it becomes current and after each
// refresh. The export's progress and outcome show in exportStatusLabel under the list.
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
    QAction* exportAction() const { return export_action_; }

    // Exports `run_id`'s newest valid checkpoint with `params`' choices (its run_id and
    // checkpoint_folder are filled in here, from the store): what the action does once its
    // dialog is accepted. False while an export runs. exportFinished follows.
    bool exportRun(const QString& run_id, HfExportParams params);
    bool isExporting() const;

    static constexpr int kRefreshIntervalMs = 2000;

    // Lists the runs of a store on another machine beside the local ones (RemoteRunsLister,
    // every kRemoteRefreshIntervalMs while shown); the same location again only lists it now
    // (with another CLI path, with that one from now on).
    // Its runs' ids are runRefKeys: watching or comparing one reads it over ssh.
    void addRemote(const RemoteLocation& location);
    static constexpr int kRemoteRefreshIntervalMs = 10000;

Q_SIGNALS:
    // A remote store was listed (`message` empty) or could not be (why, shown under the list).
    void remoteListed(const QString& location_label, const QString& message);
    void selectionChanged(const QStringList& run_ids);
    void watchRequested(const QString& run_id);
    // An export ended: `ok` with the directory written, else the engine's refusal; `message`
    // is what exportStatusLabel shows.
    void exportFinished(bool ok, const QString& message);

protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

private:
    // `store_read`: called after a refresh, so ids still missing are not in the store.
    void applyPendingSelection(bool store_read);
    // Asks the store for the current run's checkpoints; the export action follows the answer.
    void checkCurrentCheckpoints();
    void updateExportAction();
    void showRemoteStatus();
    void exportWithDialog();
    void exportFailed(const QString& run_id, const QString& error);
    void showExportStatus(const QString& text, const QString& color);
    QString runLabel(const QString& run_id) const;

    // What the store said of a run's checkpoints: the newest still on disk (step 0: none).
    struct Checkpoints {
        QString run_id;
        QString folder;
        int64_t newest_step = 0;
    };

    RunsModel* model_ = nullptr;
    RunsFilterProxy* proxy_ = nullptr;
    QLineEdit* filter_ = nullptr;
    QTableView* view_ = nullptr;
    QAction* watch_action_ = nullptr;
    QAction* export_action_ = nullptr;
    QLabel* export_status_ = nullptr;
    HfExportWorker* export_worker_ = nullptr;
    Checkpoints checkpoints_;  // of the current run once the store has answered
    QString export_dir_;       // the directory being written; empty: no export running
    QString export_run_id_;    // its run
    bool waiting_for_folder_ = false;  // the export waits for the store to name the checkpoint folder
    QString last_export_parent_;       // where the last export went: the next one is suggested there
    QTimer refresh_timer_;
    QTimer remote_timer_;
    QLabel* remote_status_ = nullptr;     // what the remote listings said, when one failed
    std::vector<RemoteRunsLister*> remotes_;
    QMap<QString, QString> remote_failures_;  // by location label: why its last listing failed
    QStringList pending_selection_;
};

}  // namespace trainbench::gui
