// RunDashboard: the current run at a glance beside the plots: status line, progress, latest values and event log.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <QMap>
#include <QObject>
#include <QString>
#include <QVector>

#include "trainbench/metric_point.h"
#include "trainbench/run_config.h"
#include "trainbench/run_store.h"
#include "trainbench/training_session.h"

class QGroupBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;

namespace trainbench::gui {

class MonitorView;
struct RemoteLocation;
class RunFeed;
class StoreTail;

// The run shown on the Training tab has one home: whichever feed delivers it (the window's
// own EngineBridge, or the StoreTail of a watched run another process writes), its points go
// to the plots and the labels, its events to the markers and the log, and its end to the
// status line through the same handlers. The shell places the widgets (statusLabel,
// progressBar, the Latest and Events boxes) and drives the run controls; the dashboard says
// what the run is doing.
//
// Object names tests find: statusLabel, progressBar, lossValueLabel, lrValueLabel,
// throughputValueLabel, collectivesValueLabel, rankPeaksValueLabel, elapsedValueLabel, eventLog.
class RunDashboard : public QObject {
    Q_OBJECT

public:
    // The widgets are created as children of `panel` (the shell lays them out); the
    // dashboard is a child of it too.
    RunDashboard(MonitorView* monitor, QWidget* panel);

    QLabel* statusLabel() const { return status_label_; }
    QProgressBar* progressBar() const { return progress_bar_; }
    QGroupBox* latestBox() const { return latest_box_; }
    QGroupBox* eventsBox() const { return events_box_; }

    // Shows what `feed` delivers, for as long as it lives. The window's own bridge is
    // followed once, at the start; a watched run's tail by watch().
    void follow(RunFeed* feed);

    // The plots empty at the scale of `config`'s run, the progress at 0 of its steps; the
    // latest values and the log stay (a config edited after a run).
    void showPlanned(const RunConfig& config);
    // A new run of `config`: showPlanned, and every latest value, the log and the batch
    // estimates (criticalBatchMeasured, checkpointWritten) of the last run cleared.
    void resetRun(const RunConfig& config);

    // Whether the window's own run is training (not pausing, paused or stopping): only then
    // does each batch of points rewrite the status line with the step.
    void setRunning(bool running) { running_ = running; }
    void showRunningStatus();
    void showPausedStatus();
    void setStatusText(const QString& text, bool error = false);
    QString statusText() const;
    void appendLog(const QString& line);
    int64_t latestStep() const { return latest_step_; }

    // Follows run `run_id` of the store in `store_folder` (see StoreTail). Its own config
    // sets the plots' scales; one that no longer parses falls back to `fallback`.
    void watch(const QString& store_folder, const QString& run_id, const RunConfig& fallback);
    // Follows run `run_id` of a store on another machine (see RemoteFeed): as watch(), and the
    // status line says what the connection does while it is not live (reconnecting, refused).
    void watchRemote(const RemoteLocation& location, const QString& run_id, const RunConfig& fallback);
    // The plots keep what they show; nothing more is read.
    void stopWatching();
    // The watched run's tail: a StoreTail, or a RemoteFeed for a run on another machine.
    StoreTail* watchedTail() const { return tail_; }
    // The watched run's own config, once read and parsed.
    const std::optional<RunConfig>& watchedConfig() const { return watched_config_; }

Q_SIGNALS:
    // Watching began or ended, or the watched run's config became known.
    void watchChanged();
    // For the Batch & memory tab: the run's newest estimate and checkpoint; zeros on a reset.
    void criticalBatchMeasured(double sequences, double relative_error, int64_t step);
    void checkpointWritten(const QString& path, int64_t step);
    // Every event of the shown run as it arrives, own or watched (live, or replayed from the
    // store): the Samples page takes its samples and checkpoints from them. The log leaves the
    // samples out; they are JSON that page shows readably.
    void eventShown(const trainbench::RunEvent& event);

private:
    void clearRun(const RunConfig& config);
    void onPoints(const RunFeed& feed, const QVector<trainbench::MetricPoint>& points);
    void onEvent(const trainbench::RunEvent& event);
    void onFinished(const trainbench::RunSummary& summary, const QString& status);
    void watchTail(StoreTail* tail, const QString& origin, const RunConfig& fallback);
    void onWatchedRunFound(const trainbench::RunRecord& record, const RunConfig& fallback);
    QString watchingStatusText() const;
    std::vector<std::pair<QString, int64_t>> rankPeaks() const;

    MonitorView* monitor_ = nullptr;
    StoreTail* tail_ = nullptr;
    QString watched_origin_;  // "written by another process", "on gpu01": how the status names its source
    std::optional<RunConfig> watched_config_;
    bool running_ = false;
    int64_t planned_steps_ = 1;
    QString planned_steps_text_;
    int64_t latest_step_ = 0;
    double latest_loss_ = 0;
    bool have_loss_ = false;
    QMap<QString, double> rank_peaks_;  // mem/<device>/peak_bytes -> the latest value

    QLabel* status_label_ = nullptr;
    QProgressBar* progress_bar_ = nullptr;
    QGroupBox* latest_box_ = nullptr;
    QLabel* loss_value_label_ = nullptr;
    QLabel* lr_value_label_ = nullptr;
    QLabel* throughput_value_label_ = nullptr;
    QLabel* collectives_value_label_ = nullptr;
    QLabel* rank_peaks_value_label_ = nullptr;
    QLabel* offload_io_value_label_ = nullptr;
    QLabel* elapsed_value_label_ = nullptr;
    QGroupBox* events_box_ = nullptr;
    QPlainTextEdit* event_log_ = nullptr;
};

}  // namespace trainbench::gui
