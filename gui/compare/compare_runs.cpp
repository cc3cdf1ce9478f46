// CompareRuns: the runs a Compare view shows, read from the store with their curves of one key, and followed while they run; no widget.
#include "compare/compare_runs.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "runs/store_reader.h"
#include "runs/store_tail.h"

namespace trainbench::gui {

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
    if (run_ids.isEmpty()) {
        takeRuns({});
        return true;
    }
    loaded_ = false;

    std::vector<std::string> ids;
    for (const QString& id : run_ids) ids.push_back(id.toStdString());
    const int request = runs_request_;
    reader_->post<RunsRead>(
        [ids](RunStore& store) {
            RunsRead read;
            for (const std::string& id : ids) {
                std::optional<RunRecord> record = store.findRun(id);
                if (!record) {
                    read.missing << QString::fromStdString(id);
                    continue;
                }
                read.runs.push_back(readRun(store, std::move(*record)));
            }
            return read;
        },
        [this, request](RunsRead read) {
            if (request == runs_request_) takeRuns(std::move(read));
        });
    return true;
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
    std::vector<std::pair<std::string, QString>> runs;  // id, name
    for (size_t i = 0; i < runs_.size(); ++i) runs.emplace_back(runs_[i].record.run_id, summaries_[i].name);
    reader_->post<std::vector<RunCurve>>(
        [runs, key](RunStore& store) {
            std::vector<RunCurve> curves;
            for (const auto& [id, name] : runs) curves.push_back({QString::fromStdString(id), name, store.metrics(id, key)});
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
        auto* tail = new StoreTail(folder(), QString::fromStdString(runs_[i].record.run_id), this);
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
    reader_->post<RunRead>([record = tail->record()](RunStore& store) { return readRun(store, record); },
                           [this, request, run_index](RunRead read) {
                               if (request != runs_request_ || run_index >= runs_.size()) return;
                               runs_[run_index].keys = std::move(read.run.keys);
                               summaries_[run_index] = std::move(read.summary);
                               if (run_index < tails_.size()) dropTail(run_index);
                               Q_EMIT runChanged(run_index);
                           });
}

}  // namespace trainbench::gui
