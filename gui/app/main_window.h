// MainWindow: the workbench window: the config's key numbers and run controls beside the live plots.
#pragma once

#include <QMainWindow>
#include <QMap>
#include <QString>
#include <QStringList>
#include <QVector>

#include "trainbench/metric_point.h"
#include "trainbench/run_config.h"
#include "trainbench/run_store.h"
#include "trainbench/training_session.h"

class QAction;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QCloseEvent;
class QShowEvent;
class QDockWidget;
class QGroupBox;
class QSplitter;
class QTabWidget;

namespace trainbench::gui {

class BatchPanel;
class CompareView;
class ConfigureView;
class EngineBridge;
class MetricPlots;
class MonitorView;
class QueueView;
class RunsPanel;
class StoreTail;

// Runs one config at a time through an EngineBridge. Widgets that tests drive carry object
// names: startButton, pauseButton, stopButton, statusLabel, progressBar, mainTabs,
// configureView (the Configure tab, see ConfigureView), metricPlots (the Training tab),
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
    enum class Tab { Configure, Training, Batch, Queue, Compare };

    MainWindow(RunConfig config, QString config_name, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Shows another config (the Configure tab's undo history starts afresh); refused (false)
    // while a run is live.
    bool setRunConfig(RunConfig config, QString config_name);
    const RunConfig& runConfig() const { return config_; }
    // Re-splits the batch of the shown config (train.global_batch_size, when set, follows);
    // refused (false) while a run is live. The plots of the last run stay.
    bool setBatchSplit(int64_t micro_batch_size, int64_t gradient_accumulation_steps);
    // runtime.zero_stage and runtime.activation_checkpointing, as the Batch tab's layout boxes
    // set them (an undoable step on the Configure tab); false while a run is live.
    bool setMemoryLayout(int64_t zero_stage, const QString& activation_checkpointing, int64_t expert_parallel);

    EngineBridge* bridge() const { return bridge_; }
    MetricPlots* plots() const { return plots_; }
    MonitorView* monitorView() const { return monitor_; }
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
    bool watchRun(const QString& run_id);
    // The plots keep what they show; nothing more is read.
    void stopWatching();
    // The run shown on the Training tab in place of an own run, or empty.
    QString watchedRunId() const;
    // The tail of the watched run, or null when none is watched.
    StoreTail* storeTail() const { return watch_tail_; }

    // Redraws pending plot data at once, e.g. before grabbing the window.
    void flushView();

    // Restores the layout of the last session (openLayoutSettings: geometry, dock and splitter
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
    // What the controls allow; finer than RunStatus because requests take effect at the
    // next micro-batch boundary, and the buttons must not invite a second request meanwhile.
    enum class Phase { Idle, Running, Pausing, Paused, Stopping, Finished };

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
    static bool isLivePhase(Phase phase);
    void setPhase(Phase phase);
    void updateStartButton();
    // "Ready" with the steps to train, or why Start is off.
    void showReadyStatus();
    void setStatusText(const QString& text, bool error = false);
    void appendLog(const QString& line);

    void onPoints(const QVector<trainbench::MetricPoint>& points);
    void onEvent(const trainbench::RunEvent& event);
    void onStatus(const QString& status);
    void onFinished(const trainbench::RunSummary& summary);
    void onStartFailed(const QString& message);
    void onWatchedRunFound(const trainbench::RunRecord& record);
    void onWatchedRunFinished(const trainbench::RunRecord& record);
    QString watchingStatusText() const;
    // Starts the queue's next waiting job (showing its config), or ends the queue.
    void runNextQueued();
    void setQueueRunning(bool running);
    // The steps of the run on the Training tab: the watched one's, else the config's.
    int64_t shownRunSteps() const;

    RunConfig config_;
    QString config_name_;
    Phase phase_ = Phase::Idle;
    int64_t latest_step_ = 0;
    double latest_loss_ = 0;
    bool have_loss_ = false;
    StoreTail* watch_tail_ = nullptr;
    int64_t watched_steps_ = 0;
    RunConfig watched_config_;
    bool watched_config_known_ = false;
    bool queue_running_ = false;
    int queue_row_ = -1;  // the queue's job that is this window's live run, or -1

    EngineBridge* bridge_ = nullptr;
    MetricPlots* plots_ = nullptr;  // owned by monitor_
    MonitorView* monitor_ = nullptr;
    BatchPanel* batch_panel_ = nullptr;
    CompareView* compare_view_ = nullptr;
    RunsPanel* runs_panel_ = nullptr;
    ConfigureView* configure_view_ = nullptr;
    QueueView* queue_view_ = nullptr;
    QDockWidget* runs_dock_ = nullptr;
    QWidget* side_panel_ = nullptr;
    QSplitter* main_splitter_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    bool remembers_layout_ = false;

    QAction* open_config_action_ = nullptr;
    QAction* save_config_action_ = nullptr;
    QAction* start_action_ = nullptr;
    QAction* pause_action_ = nullptr;
    QAction* stop_action_ = nullptr;

    QGroupBox* config_box_ = nullptr;
    QLabel* config_name_label_ = nullptr;
    QLabel* total_params_label_ = nullptr;
    QLabel* activated_params_label_ = nullptr;
    QLabel* model_shape_label_ = nullptr;
    QLabel* batch_label_ = nullptr;
    QLabel* tokens_per_step_label_ = nullptr;
    QLabel* seq_len_label_ = nullptr;
    QLabel* steps_label_ = nullptr;
    QLabel* lr_label_ = nullptr;
    QLabel* schedule_label_ = nullptr;
    QLabel* device_label_ = nullptr;

    QPushButton* start_button_ = nullptr;
    QPushButton* pause_button_ = nullptr;
    QPushButton* stop_button_ = nullptr;
    QLabel* status_label_ = nullptr;
    QProgressBar* progress_bar_ = nullptr;

    QLabel* loss_value_label_ = nullptr;
    QLabel* lr_value_label_ = nullptr;
    QLabel* throughput_value_label_ = nullptr;
    QLabel* collectives_value_label_ = nullptr;
    QLabel* rank_peaks_value_label_ = nullptr;
    QMap<QString, double> rank_peaks_;  // mem/<device>/peak_bytes -> the latest value
    static bool isRankPeakKey(const std::string& key);
    std::vector<std::pair<QString, int64_t>> rankPeaks() const;
    QLabel* elapsed_value_label_ = nullptr;
    QPlainTextEdit* event_log_ = nullptr;
};

}  // namespace trainbench::gui
