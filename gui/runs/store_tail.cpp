// StoreTail: follows one run of the store while another process writes it, with EngineBridge's signals.
#include "runs/store_tail.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runs/store_reader.h"

namespace trainbench::gui {

// A resumed run re-commits the steps after its checkpoint. A point behind the newest step
// delivered for its key starts such a rewind: it and every point up to that newest step are
// not delivered twice. Without a rewind a point at the newest step itself is new (a second
// memory sample at one step).
struct KeyProgress {
    int64_t newest_step = 0;
    bool rewinding = false;
};

struct StoreTail::Progress {
    // The store's row of the last point read: each read asks only for rows after it.
    int64_t last_row = 0;
    // Per key, the newest step delivered, and whether the run is re-committing steps behind it.
    std::unordered_map<std::string, KeyProgress> keys;
    size_t events = 0;
    int quiet_polls = 0;
};

struct StoreTail::Read {
    std::optional<RunRecord> record;
    QVector<MetricPoint> points;
    QVector<RunEvent> events;
};

namespace {

// The points of `read` (in commit order) that the plots do not have yet (see KeyProgress).
QVector<MetricPoint> newPoints(std::vector<MetricPoint>& read, std::unordered_map<std::string, KeyProgress>& keys) {
    QVector<MetricPoint> fresh;
    fresh.reserve(static_cast<qsizetype>(read.size()));
    for (MetricPoint& point : read) {
        auto [it, first] = keys.try_emplace(point.key);
        KeyProgress& key = it->second;
        if (!first) {
            if (point.step < key.newest_step) key.rewinding = true;
            if (key.rewinding && point.step <= key.newest_step) continue;
        }
        key.rewinding = false;
        key.newest_step = point.step;
        fresh.push_back(std::move(point));
    }
    return fresh;
}

}  // namespace

StoreTail::StoreTail(QString store_folder, QString run_id, QObject* parent)
    : RunFeed(parent),
      store_folder_(std::move(store_folder)),
      run_id_(std::move(run_id)),
      progress_(std::make_shared<Progress>()) {
    reader_ = new StoreReader(store_folder_, this);
    poll_timer_.setSingleShot(true);
    poll_timer_.setInterval(kPollIntervalMs);
    connect(&poll_timer_, &QTimer::timeout, this, &StoreTail::readNow);
    connect(reader_, &StoreReader::failed, this, [this](const QString& message) {
        reading_ = false;
        if (!polling_) return;
        Q_EMIT failed(tr("cannot read run %1 from the store %2: %3").arg(run_id_, store_folder_, message));
        // A store busy or briefly unreadable is no reason to stop following the run.
        poll_timer_.start();
    });
}

StoreTail::~StoreTail() = default;

void StoreTail::start() {
    if (started_) return;
    started_ = true;
    polling_ = true;
    readNow();
}

void StoreTail::stop() {
    polling_ = false;
    ++generation_;
    poll_timer_.stop();
}

void StoreTail::readSoon() {
    if (!polling_) return;
    if (reading_) {
        read_again_ = true;
        return;
    }
    poll_timer_.stop();
    readNow();
}

void StoreTail::readNow() {
    if (!polling_ || reading_) return;
    reading_ = true;
    const std::string run_id = run_id_.toStdString();
    const std::string folder = store_folder_.toStdString();
    const std::shared_ptr<Progress> progress = progress_;
    const int generation = generation_;
    reader_->post<Read>(
        [run_id, folder, progress](RunStore& store) {
            Read read;
            // The status first: when it says the run has ended, the points read after it are
            // all the run will ever have (the writer commits its last points before the status).
            read.record = store.findRun(run_id);
            if (!read.record) return read;
            if (read.record->status == "running" && progress->quiet_polls >= kQuietPollsBeforeOwnerCheck) {
                progress->quiet_polls = 0;
                {
                    const RunStore reopened(folder);  // its opening marks the run interrupted if its writer is gone
                }
                read.record = store.findRun(run_id);
                if (!read.record) return read;
            }
            std::vector<MetricPoint> points = store.metricsAfter(run_id, progress->last_row, &progress->last_row);
            read.points = newPoints(points, progress->keys);
            std::vector<RunEvent> events = store.events(run_id);
            // Events come in insertion order; fewer than delivered means a resume removed some.
            for (size_t i = progress->events; i < events.size(); ++i) read.events.push_back(std::move(events[i]));
            progress->events = std::max(progress->events, events.size());
            progress->quiet_polls = read.points.isEmpty() && read.events.isEmpty() ? progress->quiet_polls + 1 : 0;
            return read;
        },
        [this, generation](Read read) {
            reading_ = false;
            if (generation == generation_) deliver(std::move(read));
        });
}

void StoreTail::deliver(Read read) {
    if (!polling_) return;
    ++read_count_;
    if (!read.record) {
        polling_ = false;
        Q_EMIT failed(tr("run %1 is not in the store %2").arg(run_id_, store_folder_));
        return;
    }
    const bool first = !loaded_;
    const QString previous_status = first ? QString() : QString::fromStdString(record_.status);
    record_ = std::move(*read.record);
    if (first) Q_EMIT runFound(record_);
    if (!read.points.isEmpty()) Q_EMIT pointsArrived(read.points);
    for (const RunEvent& event : read.events) Q_EMIT eventArrived(event);
    if (first) {
        loaded_ = true;
        Q_EMIT loaded();
    }
    const QString status = QString::fromStdString(record_.status);
    if (status != previous_status) Q_EMIT statusChanged(status);
    if (record_.status != "running") {
        polling_ = false;
        Q_EMIT runFinished(summaryOf(record_), status);
        return;
    }
    if (!polling_) return;
    if (std::exchange(read_again_, false)) readNow();
    else poll_timer_.start();
}

RunSummary StoreTail::summaryOf(const RunRecord& record) {
    RunSummary summary;
    summary.run_id = record.run_id;
    // RunStatus has no `interrupted`: a run whose writer died counts as failed.
    summary.status = RunStatus::Failed;
    for (RunStatus status : {RunStatus::Running, RunStatus::Completed, RunStatus::Stopped, RunStatus::Failed})
        if (record.status == runStatusName(status)) summary.status = status;
    summary.steps = record.steps;
    summary.final_loss = record.final_loss ? *record.final_loss : std::numeric_limits<double>::quiet_NaN();
    summary.wall_time_s = std::numeric_limits<double>::quiet_NaN();
    summary.error = record.error;
    return summary;
}

}  // namespace trainbench::gui
