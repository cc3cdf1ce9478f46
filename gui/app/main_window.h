// MainWindow: the workbench window: the config's key numbers and run controls beside the live plots.
#pragma once

#include <QMainWindow>
#include <QString>
#include <QStringList>

#include "app/layout_settings.h"
#include "app/run_controls.h"
#include "common/config_edit.h"
#include "queue/run_queue.h"
#include "trainbench/run_config.h"

class QCloseEvent;
class QShowEvent;
class QDockWidget;
class QSplitter;
class QTabWidget;

namespace trainbench::gui {

class BatchPanel;
class CompareView;
class ConfigBox;
class ConfigureView;
class EngineBridge;
class MetricPlots;
class MonitorView;
class QueueRunner;
class QueueView;
class RunControls;
class RunDashboard;
class RunsPanel;
struct RemoteLocation;
class SamplesPanel;
class StoreTail;

// The shell: menus, tabs, the runs dock, the side panel and the wiring between them. It runs
// one config at a time through an EngineBridge; RunControls keeps the run's phase (what Start,
// Pause and Stop allow), the RunDashboard (monitor/) shows the run, own or watched, and the
// QueueRunner (queue/) trains the queue's jobs. Widgets that tests drive carry object
// names: startButton, pauseButton, stopButton, statusLabel, progressBar, mainTabs,
// configureView (the Configure tab, see ConfigureView), metricPlots (the Training tab),
// samplesPanel (its Samples page, see SamplesPanel),
// batchPanel (the Batch & memory tab, see BatchPanel for its own), queueView (the Queue tab,
// see QueueView), compareView (the Compare tab, see CompareView) and runsDock holding
// runsPanel (the runs of the store, see RunsPanel), whose selection is what the Compare tab
// compares. On the Compare tab the runs list takes the place of the config and run controls
// (sidePanel).
// A run and the batch explorer never overlap: each disables the other's start.
//
// The Queue tab's jobs run through the same bridge, one after another (startQueue): each
// job's config becomes the window's while it trains, so the numbers beside its plots are its
// own. Stopping a queued run pauses the queue.
//
// The Training tab shows either the window's own run or a watched run of the store (watchRun:
// a run another process, such as a headless trainbench-cli run, writes or has written; a
// double-click in the runs list or its "Watch on Monitor" action). A watched run feeds the
// plots, the Latest values, the event log and the progress bar as an own run does; Pause and
// Stop never act on it, and starting an own run stops watching.
//
// The Configure tab edits a copy of the config; each valid result becomes the window's config
// (the side panel, the batch panel and its planner follow). While a run is live the copy is
// locked. Menus (fileMenu, editMenu, runMenu) hold the actions openConfigAction,
// saveConfigAction, undoAction, redoAction, startAction, pauseAction and stopAction.
class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    // `config_name` is what the window shows as the config's origin (a file name).
    // Samples: the Training tab at its Samples page (Training leaves the page as it is).
    enum class Tab { Configure, Training, Samples, Batch, Queue, Compare };

    MainWindow(RunConfig config, QString config_name, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Shows another config (the Configure tab's undo history starts afresh); refused (false)
    // while a run is live.
    bool setRunConfig(RunConfig config, QString config_name);
    const RunConfig& runConfig() const { return config_; }
    // Applies one edit of the shown config (the Batch tab's split, memory layout, offload,
    // precision, target or what fits: BatchPanel::configEditRequested) as one undoable step on
    // the Configure tab, named as the edit says. Refused (false, nothing changed) while a run is
    // live, or when the engine refuses a field's value. The plots of the last run stay.
    bool applyEdit(const ConfigEdit& edit);

    EngineBridge* bridge() const { return bridge_; }
    RunControls* runControls() const { return controls_; }
    RunDashboard* dashboard() const { return dashboard_; }
    QueueRunner* queueRunner() const { return queue_runner_; }
    MetricPlots* plots() const { return plots_; }
    MonitorView* monitorView() const { return monitor_; }
    SamplesPanel* samplesPanel() const { return samples_panel_; }
    BatchPanel* batchPanel() const { return batch_panel_; }
    CompareView* compareView() const { return compare_view_; }
    ConfigureView* configureView() const { return configure_view_; }
    QueueView* queueView() const { return queue_view_; }
    RunsPanel* runsPanel() const { return runs_panel_; }
    void showTab(Tab tab);
    // Selects these runs in the runs list and shows them on the Compare tab.
    void compareRuns(const QStringList& run_ids);

    // Shows run `run_id` of the runs list's store on the Training tab: everything stored at
    // once, then what its writer adds (~every StoreTail::kPollIntervalMs) until its status
    // leaves `running`. Refused (false) while the window's own run is live. A run the store
    // lacks is reported on the status line and by storeTail()'s failed().
    // `run_id` may be a remote run's key (RunRef): it is followed over ssh (RemoteFeed).
    bool watchRun(const QString& run_id);
    // Lists the runs of a store on another machine in the runs list (and remembers it among
    // the recent ones "Open remote store…" offers).
    void openRemoteStore(const RemoteLocation& location);
    void openRemoteStoreWithDialog();
    // The plots keep what they show; nothing more is read.
    void stopWatching();
    // The run shown on the Training tab in place of an own run, or empty.
    QString watchedRunId() const;
    // The tail of the watched run, or null when none is watched.
    StoreTail* storeTail() const;

    // Redraws pending plot data at once, e.g. before grabbing the window.
    void flushView();

    // Restores the layout of the last session (restoreWindowLayout: geometry, dock and splitter
    // sizes, the open tab) and saves it again when the window closes. False when no tab was
    // remembered. Windows that never call this leave the settings alone.
    bool rememberLayout();
    void saveLayout() const;
    bool restoreLayout();

public Q_SLOTS:
    // The Start button: starts the shown config. False when the engine refuses it.
    bool startRun();
    void togglePause();
    void stopRun();
    // Runs the queue's waiting jobs one after another, starting now when no run is live, else
    // when the live one ends. A job the user stops pauses the queue.
    void startQueue();
    // The running job ends as it would; no other starts.
    void stopQueue();

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void buildUi();
    void buildMenus();
    // Shows the runs list or the config and run controls at the left, as the tab needs.
    void updateSidePanels();
    // Takes over a valid config edited on the Configure tab.
    void adoptEditedConfig(const RunConfig& config, const QString& config_name);
    void openConfigWithDialog();
    void saveConfigWithDialog();
    // Gives the runs list its width when it is shown (the Compare tab).
    void fitRunsDock();
    void showConfig();
    void showConfigNumbers();
    // What keeps Start off besides a live run, for RunControls.
    RunControls::StartGate startGate() const;
    // Locks what a live run must keep (the Configure tab, the batch panel's edits).
    void onPhaseChanged(RunControls::Phase phase);
    // "Ready" with the steps to train, or why Start is off.
    void showReadyStatus();
    WindowLayout layoutParts() const;
    // The queue's way of starting a job: its config becomes the window's, the tab stays.
    bool startQueuedJob(const RunQueue::Job& job, QString* refusal);

    RunConfig config_;
    QString config_name_;

    EngineBridge* bridge_ = nullptr;
    RunControls* controls_ = nullptr;
    RunDashboard* dashboard_ = nullptr;
    QueueRunner* queue_runner_ = nullptr;
    MetricPlots* plots_ = nullptr;  // owned by monitor_
    MonitorView* monitor_ = nullptr;
    SamplesPanel* samples_panel_ = nullptr;  // a page of monitor_
    BatchPanel* batch_panel_ = nullptr;
    CompareView* compare_view_ = nullptr;
    RunsPanel* runs_panel_ = nullptr;
    ConfigureView* configure_view_ = nullptr;
    QueueView* queue_view_ = nullptr;
    QDockWidget* runs_dock_ = nullptr;
    QWidget* side_panel_ = nullptr;
    QSplitter* main_splitter_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    ConfigBox* config_box_ = nullptr;
    bool remembers_layout_ = false;
};

}  // namespace trainbench::gui
