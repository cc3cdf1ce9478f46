// CompareRuns: the runs a Compare view shows, read from the store with their curves of one key, and followed while they run; no widget.
#include "compare/compare_runs.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "runs/remote_run_sync.h"
#include "runs/run_ref.h"
#include "runs/store_reader.h"
#include "runs/store_tail.h"

namespace trainbench::gui {
namespace {

// On the reader's thread, the store a compared run is read from: the reader's own for the local
// folder, else a remote run's copy, a store of its own opened into `opened` for this read.
RunStore& storeOf(RunStore& local, const QString& local_folder, const QString& folder,
                  std::unique_ptr<RunStore>& opened) {
    if (folder == local_folder) return local;
    opened = std::make_unique<RunStore>(folder.toStdString());
    return *opened;
}

}  // namespace

CompareRuns::CompareRuns(const QString& store_folder, QObject* parent) : QObject(parent) {
    reader_ = new StoreReader(store_folder, this);
    connect(reader_, &StoreReader::failed, this, [this](const QString& message) {
        loaded_ = true;
        // A run's summary that could not be read again leaves it as shown: its tail has ended.
        for (size_t i = 0; i < tails_.size(); ++i)
            if (tails_[i] && !tails_[i]->isPolling()) dropTail(i);
        Q_EMIT failed(message);
    });
}

const QString& CompareRuns::folder() const {
    return reader_->folder();
}

bool CompareRuns::setRuns(const QStringList& run_ids) {
    const std::set<QString> wanted(run_ids.begin(), run_ids.end());
    const std::set<QString> shown(run_ids_.begin(), run_ids_.end());
    if (wanted == shown && run_ids.size() == run_ids_.size()) return false;
    run_ids_ = run_ids;
    stopFollowing();
    ++runs_request_;
    ++curves_request_;  // curves of the old selection are of no use any more
    syncRemoteRuns();
    if (run_ids.isEmpty()) {
        waiting_for_syncs_ = false;
        takeRuns({});
        return true;
    }
    loaded_ = false;
    waiting_for_syncs_ = true;
    readRunsWhenSynced();
    return true;
}

void CompareRuns::syncRemoteRuns() {
    const std::set<QString> wanted(run_ids_.begin(), run_ids_.end());
    for (auto it = syncs_.begin(); it != syncs_.end();) {
        if (wanted.count(it.key())) {
            ++it;
            continue;
        }
        it.value()->disconnect(this);
        it = syncs_.erase(it);
    }
    for (const QString& key : run_ids_) {
        const RunRef ref = resolveRunRef(key);
        if (!ref.remote || syncs_.contains(key)) continue;
        std::shared_ptr<RemoteRunSync> sync = RemoteRunSync::shared(*ref.remote, ref.run_id);
        syncs_.insert(key, sync);
        connect(sync.get(), &RemoteRunSync::caughtUp, this, &CompareRuns::readRunsWhenSynced);
        connect(sync.get(), &RemoteRunSync::ended, this, &CompareRuns::readRunsWhenSynced);
        connect(sync.get(), &RemoteRunSync::rewritten, this, [this, key] {
            Q_EMIT failed(tr("%1 was written again on its host (resumed): select it again to read it afresh").arg(key));
        });
        connect(sync.get(), &RemoteRunSync::stateChanged, this,
                [this](RemoteRunSync::State state, const QString& text) {
                    if (state != RemoteRunSync::State::Failed && state != RemoteRunSync::State::Reconnecting) return;
                    // Read from the copy as it is; the connection is tried again meanwhile.
                    if (waiting_for_syncs_) Q_EMIT failed(text);
                    readRunsWhenSynced();
                });
        sync->start();
    }
}

void CompareRuns::readRunsWhenSynced() {
    if (!waiting_for_syncs_) return;
    for (const std::shared_ptr<RemoteRunSync>& sync : std::as_const(syncs_)) {
        const auto state = sync->state();
        const bool settled = sync->isCaughtUp() || state == RemoteRunSync::State::Failed ||
                             state == RemoteRunSync::State::Ended || state == RemoteRunSync::State::Reconnecting;
        if (!settled) return;
    }
    waiting_for_syncs_ = false;

    struct Wanted {
        QString ref;
        std::string run_id;
        QString folder;  // the local store's, or the remote run's copy
    };
    std::vector<Wanted> wanted;
    for (const QString& key : run_ids_) {
        const RunRef ref = resolveRunRef(key);
        wanted.push_back({key, ref.run_id.toStdString(), ref.folder(folder())});
    }
    const int request = runs_request_;
    const QString local_folder = folder();
    reader_->post<RunsRead>(
        [wanted, local_folder](RunStore& local) {
            RunsRead read;
            for (const Wanted& want : wanted) {
                std::unique_ptr<RunStore> copy;
                RunStore& store = storeOf(local, local_folder, want.folder, copy);
                std::optional<RunRecord> record = store.findRun(want.run_id);
                if (!record) {
                    read.missing << want.ref;
                    continue;
                }
                RunRead run = readRun(store, std::move(*record));
                run.run.ref = want.ref;
                run.run.folder = want.folder;
                read.runs.push_back(std::move(run));
            }
            return read;
        },
        [this, request](RunsRead read) {
            if (request == runs_request_) takeRuns(std::move(read));
        });
}

CompareRuns::RunRead CompareRuns::readRun(RunStore& store, RunRecord record) {
    // Runs on the reader's thread.
    RunRead read;
    read.run.keys = store.metricKeys(record.run_id);
    read.summary = summarizeStoredRun(store, record, read.run.keys);
    read.run.record = std::move(record);
    return read;
}

void CompareRuns::takeRuns(RunsRead read) {
    runs_.clear();
    summaries_.clear();
    for (RunRead& run : read.runs) {
        // A remote run is named with its host, in the table, the legend and the CSV alike.
        if (const RunRef ref = resolveRunRef(run.run.ref); ref.remote)
            run.summary.name = tr("%1 (%2)").arg(run.summary.name, ref.remote->hostLabel());
        runs_.push_back(std::move(run.run));
        summaries_.push_back(std::move(run.summary));
    }
    Q_EMIT runsRead(read.missing);
}

void CompareRuns::loadCurves(const std::string& key) {
    const int request = ++curves_request_;
    stopFollowing();
    if (runs_.empty()) {
        key_ = key;
        takeCurves({});
        return;
    }
    loaded_ = false;
    struct Wanted {
        std::string run_id;
        QString name, folder;
    };
    std::vector<Wanted> runs;
    for (size_t i = 0; i < runs_.size(); ++i) runs.push_back({runs_[i].record.run_id, summaries_[i].name, runs_[i].folder});
    const QString local_folder = folder();
    reader_->post<std::vector<RunCurve>>(
        [runs, key, local_folder](RunStore& local) {
            std::vector<RunCurve> curves;
            for (const Wanted& run : runs) {
                std::unique_ptr<RunStore> copy;
                RunStore& store = storeOf(local, local_folder, run.folder, copy);
                curves.push_back({QString::fromStdString(run.run_id), run.name, store.metrics(run.run_id, key)});
            }
            return curves;
        },
        [this, request, key](std::vector<RunCurve> curves) {
            if (request != curves_request_) return;
            // Until now the shown curves, and their series, stay those of the key before.
            key_ = key;
            takeCurves(std::move(curves));
        });
}

void CompareRuns::takeCurves(std::vector<RunCurve> curves) {
    curves_ = std::move(curves);
    series_.clear();
    series_.reserve(curves_.size());
    for (const RunCurve& curve : curves_) {
        RunSeries series = RunSeries::ofKey(key_);
        series.addPoints(curve.points);
        series_.push_back(std::move(series));
    }
    loaded_ = true;
    followRunningRuns();
    Q_EMIT curvesRead();
}

const MetricSeries& CompareRuns::curveSeries(size_t run_index) const {
    // A RunSeries ofKey always has the series of its key.
    return *series_.at(run_index).seriesOfKey(key_);
}

bool CompareRuns::isPolling() const {
    return std::any_of(tails_.begin(), tails_.end(), [](const StoreTail* tail) { return tail != nullptr; });
}

int CompareRuns::runningCount() const {
    return static_cast<int>(
        std::count_if(runs_.begin(), runs_.end(), [](const Run& run) { return run.record.status == "running"; }));
}

void CompareRuns::followRunningRuns() {
    stopFollowing();
    if (curves_.size() != runs_.size()) return;
    tails_.assign(runs_.size(), nullptr);
    for (size_t i = 0; i < runs_.size(); ++i) {
        if (runs_[i].record.status != "running") continue;
        // A remote run's copy grows while its sync (kept while compared) writes it.
        auto* tail = new StoreTail(runs_[i].folder, QString::fromStdString(runs_[i].record.run_id), this);
        tail->setPollInterval(kPollIntervalMs);
        connect(tail, &RunFeed::pointsArrived, this,
                [this, i](const QVector<MetricPoint>& points) { appendLivePoints(i, points); });
        connect(tail, &RunFeed::runFinished, this, [this, i] { onRunLeftRunning(i); });
        connect(tail, &StoreTail::failed, this, [this, i, tail](const QString&) {
            // A read that failed is tried again; a run deleted meanwhile is left as it was
            // shown, no longer running here.
            if (tail->isPolling()) return;
            runs_[i].record.status = "unknown";
            dropTail(i);
            Q_EMIT runChanged(i);
        });
        tails_[i] = tail;
        tail->start();
    }
}

void CompareRuns::stopFollowing() {
    for (size_t i = 0; i < tails_.size(); ++i) dropTail(i);
    tails_.clear();
}

void CompareRuns::dropTail(size_t run_index) {
    StoreTail* tail = tails_[run_index];
    if (!tail) return;
    tails_[run_index] = nullptr;
    tail->stop();
    // Its own signal may be what is running now.
    tail->deleteLater();
}

void CompareRuns::appendLivePoints(size_t run_index, const QVector<MetricPoint>& points) {
    if (!loaded_ || run_index >= curves_.size()) return;
    RunSeries& series = series_[run_index];
    std::vector<MetricPoint>& stored = curves_[run_index].points;
    std::vector<MetricPoint> fresh;
    for (const MetricPoint& point : points) {
        // The tail's first read repeats the whole run: only steps after the ones read are new.
        if (!series.keeps(point.key) || (!stored.empty() && point.step <= stored.back().step)) continue;
        stored.push_back(point);
        fresh.push_back(point);
    }
    if (fresh.empty()) return;
    series.addPoints(fresh);
    Q_EMIT curveGrew(run_index);
}

void CompareRuns::onRunLeftRunning(size_t run_index) {
    StoreTail* tail = tails_[run_index];
    if (!tail) return;
    runs_[run_index].record = tail->record();
    // The summary, as setRuns reads it, now that the run has all its points. The tail stays
    // until then, so isPolling() turns false only once the summary is read.
    const int request = runs_request_;
    const QString run_folder = runs_[run_index].folder;
    const QString local_folder = folder();
    reader_->post<RunRead>([record = tail->record(), run_folder, local_folder](RunStore& local) {
                               std::unique_ptr<RunStore> copy;
                               return readRun(storeOf(local, local_folder, run_folder, copy), record);
                           },
                           [this, request, run_index](RunRead read) {
                               if (request != runs_request_ || run_index >= runs_.size()) return;
                               runs_[run_index].keys = std::move(read.run.keys);
                               summaries_[run_index] = std::move(read.summary);
                               if (run_index < tails_.size()) dropTail(run_index);
                               Q_EMIT runChanged(run_index);
                           });
}

}  // namespace trainbench::gui
