// StoreTail: follows one run of the store while another process writes it, with EngineBridge's signals.
#include "store_tail.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store_reader.h"

namespace trainbench::gui {

struct StoreTail::Progress {
    // Points delivered per step: a point committed later at a step already seen (another
    // key, a second memory sample) still counts as new.
    std::unordered_map<int64_t, size_t> points_per_step;
    size_t events = 0;
    int quiet_polls = 0;
};

struct StoreTail::Read {
    std::optional<RunRecord> record;
    QVector<MetricPoint> points;
    QVector<RunEvent> events;
};

namespace {

// The points of `all` (ordered by step, then insertion) beyond those already counted per step.
QVector<MetricPoint> newPoints(std::vector<MetricPoint>& all, std::unordered_map<int64_t, size_t>& delivered) {
    QVector<MetricPoint> fresh;
    size_t begin = 0;
    while (begin < all.size()) {
        size_t end = begin;
        while (end < all.size() && all[end].step == all[begin].step) ++end;
        size_t& seen = delivered[all[begin].step];
        for (size_t i = begin + seen; i < end; ++i) fresh.push_back(std::move(all[i]));
        // Fewer than delivered: a resume removed points; the plots keep what they were shown.
        seen = std::max(seen, end - begin);
        begin = end;
    }
    return fresh;
}

}  // namespace

StoreTail::StoreTail(QString store_folder, QString run_id, QObject* parent)
    : QObject(parent),
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
            std::vector<MetricPoint> points = store.metrics(run_id);
            read.points = newPoints(points, progress->points_per_step);
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
        Q_EMIT runFinished(record_);
        return;
    }
    if (polling_) poll_timer_.start();
}

}  // namespace trainbench::gui
