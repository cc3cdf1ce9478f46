// CompareRuns: the runs a Compare view shows, read from the store with their curves of one key, and followed while they run; no widget.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <QHash>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include "compare/compare_summary.h"
#include "compare/curves_csv.h"
#include "runs/run_series.h"
#include "trainbench/metric_point.h"
#include "trainbench/run_store.h"

namespace trainbench::gui {

class RemoteRunSync;
class StoreReader;
class StoreTail;

// The view asks, this reads, and a signal says what arrived; the view only draws. Everything
// is read on a StoreReader's thread: first each run's record, keys and summary (setRuns, then
// runsRead), then every run's points of one key (loadCurves, then curvesRead). A result of a
// request superseded meanwhile is dropped.
//
// Each curve is kept twice: as stored (curves(): what the CSV writes, nothing downsampled) and
// routed through a RunSeries of its key (series(): the points and their EMA that are drawn), so
// Compare draws a key through the same code as the live plots.
//
// While a compared run is `running` (trained by this or another process), a StoreTail follows
// it (every kPollIntervalMs, on the tail's reader thread): its points of the key after the last
// step read extend its curve (curveGrew), and once it has left `running` (finished, or
// interrupted: the tail notices a writer that died) its summary is read again (runChanged).
// Following stops when no compared run is running any more, and at each new request.
class CompareRuns : public QObject {
    Q_OBJECT

public:
    // What is read of one run before its curve.
    struct Run {
        RunRecord record;
        std::vector<std::string> keys;  // the keys it has points of
        QString ref;                    // the id the window knows it by (a RunRef key)
        QString folder;                 // the store it is read from: the local one, or a remote run's copy
    };

    static constexpr int kPollIntervalMs = 1000;

    // `store_folder`: the store to read.
    explicit CompareRuns(const QString& store_folder, QObject* parent = nullptr);

    const QString& folder() const;

    // Reads these runs (ids or RunRef keys: remote runs are compared with local ones), in this
    // order; runsRead follows (at once for none). A remote run is first brought up to date in
    // its copy (its RemoteRunSync, kept while it is compared, so a running one keeps growing);
    // one whose host cannot be reached (refused, or a first try that failed) is read from its
    // copy as it is, and failed() says why.
    // The same set again changes nothing and returns false.
    bool setRuns(const QStringList& run_ids);
    // The sync of a compared remote run (null for a local one).
    RemoteRunSync* syncOf(const QString& ref) const { return syncs_.contains(ref) ? syncs_.value(ref).get() : nullptr; }
    const QStringList& runIds() const { return run_ids_; }
    // The runs found, and their summaries (parallel).
    const std::vector<Run>& runs() const { return runs_; }
    const std::vector<CompareSummary>& summaries() const { return summaries_; }

    // Reads every run's points of `key`; curvesRead follows (at once when there is no run).
    void loadCurves(const std::string& key);
    const std::string& key() const { return key_; }
    // Parallel to runs() once curvesRead: each run's curve as stored, and as a RunSeries of key().
    const std::vector<RunCurve>& curves() const { return curves_; }
    const std::vector<RunSeries>& series() const { return series_; }
    // The drawn series of run `run_index`'s curve (its points and their EMA).
    const MetricSeries& curveSeries(size_t run_index) const;

    // True once the runs and the curves of the latest request are read, or a read failed.
    bool isLoaded() const { return loaded_; }
    // Whether a compared run is followed, so new points are being read.
    bool isPolling() const;
    // How many compared runs the store says are `running`.
    int runningCount() const;

Q_SIGNALS:
    // runs() and summaries() are the newly read ones; `missing` names the ids the store lacks.
    void runsRead(const QStringList& missing);
    // curves() and series() are the newly read ones; the running runs are followed from now.
    void curvesRead();
    // Run `run_index`'s curve has new points.
    void curveGrew(size_t run_index);
    // Run `run_index` is no longer running: its summary was read again, or the store lost it.
    void runChanged(size_t run_index);
    // The store cannot be read; what was read before stays.
    void failed(const QString& message);

private:
    // What setRuns reads of one run, and what is read again once it has left `running`.
    struct RunRead {
        Run run;
        CompareSummary summary;
    };
    struct RunsRead {
        std::vector<RunRead> runs;
        QStringList missing;
    };
    static RunRead readRun(RunStore& store, RunRecord record);
    // Keeps a sync for each remote run of run_ids_, and only those.
    void syncRemoteRuns();
    // Reads the runs once every remote one's sync has caught up or given up.
    void readRunsWhenSynced();

    void takeRuns(RunsRead read);
    void takeCurves(std::vector<RunCurve> curves);
    // A StoreTail for each compared run that is `running`, replacing the tails of before.
    void followRunningRuns();
    void stopFollowing();
    void appendLivePoints(size_t run_index, const QVector<MetricPoint>& points);
    void onRunLeftRunning(size_t run_index);
    void dropTail(size_t run_index);

    StoreReader* reader_ = nullptr;
    QStringList run_ids_;
    std::vector<Run> runs_;
    std::vector<CompareSummary> summaries_;
    std::string key_;
    std::vector<RunCurve> curves_;
    std::vector<RunSeries> series_;
    int runs_request_ = 0;
    int curves_request_ = 0;
    bool loaded_ = true;
    // Parallel to runs_ while curves are shown: the tail of each running run, else null.
    std::vector<StoreTail*> tails_;
    QHash<QString, std::shared_ptr<RemoteRunSync>> syncs_;  // by RunRef key (RemoteRunSync::shared)
    bool waiting_for_syncs_ = false;
};

}  // namespace trainbench::gui
