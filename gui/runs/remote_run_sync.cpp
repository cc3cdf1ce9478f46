// RemoteRunSync: the run stream of a remote run written into the workbench's copy, reconnecting until the run ends.
#include "runs/remote_run_sync.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <QHash>
#include <QProcess>

#include "runs/store_reader.h"

namespace trainbench::gui {

namespace {

constexpr qsizetype kErrorsKept = 4096;

// The same point: step, key, and value and wall time as bits (a rewritten step has another
// wall time even where its value is the same).
bool samePoint(const std::optional<MetricPoint>& a, const std::optional<MetricPoint>& b) {
    if (!a || !b) return !a && !b;
    const auto bits = [](double x) {
        // NaN travels as null and comes back as the one quiet NaN.
        if (std::isnan(x)) return std::numeric_limits<uint64_t>::max();
        uint64_t u = 0;
        std::memcpy(&u, &x, sizeof u);
        return u;
    };
    return a->step == b->step && a->key == b->key && bits(a->value) == bits(b->value) &&
           bits(a->wall_time) == bits(b->wall_time);
}

}  // namespace

// What one piece of the stream changes in the copy, written in one transaction.
struct RemoteRunSync::Batch {
    std::optional<RunRecord> run;
    std::vector<MetricPoint> points;
    std::vector<RunEvent> events;
    bool live = false;
    std::optional<RunRecord> end;

    bool empty() const { return !run && points.empty() && events.empty() && !live && !end; }
};

RemoteRunSync::RemoteRunSync(RemoteLocation location, QString run_id, QObject* parent)
    : QObject(parent), location_(std::move(location)), run_id_(std::move(run_id)) {
    cache_folder_ = location_.cacheFolder();
    cache_ = new StoreReader(cache_folder_, this);
    connect(cache_, &StoreReader::failed, this, [this](const QString& message) {
        fail(tr("cannot write the copy of run %1 in %2: %3").arg(run_id_, cache_folder_, message));
    });
    retry_timer_.setSingleShot(true);
    connect(&retry_timer_, &QTimer::timeout, this, &RemoteRunSync::connectFrom);
}

RemoteRunSync::~RemoteRunSync() {
    endProcess();
}

std::shared_ptr<RemoteRunSync> RemoteRunSync::shared(const RemoteLocation& location, const QString& run_id) {
    // The GUI thread's only.
    static QHash<QString, std::weak_ptr<RemoteRunSync>> syncs;
    const QString key = location.cacheFolder() + QLatin1Char('\n') + run_id;
    if (std::shared_ptr<RemoteRunSync> sync = syncs.value(key).lock(); sync && sync->state() != State::Failed)
        return sync;
    // Released from inside one of its own signals, perhaps: deleted once that has returned.
    std::shared_ptr<RemoteRunSync> sync(new RemoteRunSync(location, run_id), [](RemoteRunSync* released) {
        released->stop();
        released->deleteLater();
    });
    syncs.insert(key, sync);
    return sync;
}

void RemoteRunSync::setRetryDelays(int first_ms, int max_ms) {
    first_retry_ms_ = next_retry_ms_ = std::max(1, first_ms);
    max_retry_ms_ = std::max(first_retry_ms_, max_ms);
}

void RemoteRunSync::start() {
    if (state_ != State::Idle) return;
    if (const QString why = location_.problem(); !why.isEmpty()) return fail(why);
    if (const QString why = RemoteLocation::runIdProblem(run_id_); !why.isEmpty()) return fail(why);
    connectFrom();
}

void RemoteRunSync::stop() {
    ++generation_;
    retry_timer_.stop();
    endProcess();
    if (state_ != State::Ended && state_ != State::Failed) setState(State::Idle, tr("stopped"));
}

void RemoteRunSync::dropConnection() {
    if (process_) process_->kill();  // finished() follows, as for a connection the network ended
}

void RemoteRunSync::connectFrom() {
    if (state_ != State::Reconnecting) setState(State::Connecting, tr("connecting to %1…").arg(location_.hostLabel()));
    const std::string run_id = run_id_.toStdString();
    const int generation = generation_;
    // Queued behind every write: the copy as it will be once what has arrived is written.
    cache_->post<Copy>(
        [run_id](RunStore& store) {
            Copy copy;
            copy.has_run = store.findRun(run_id).has_value();
            copy.last_step = store.lastStep(run_id);
            copy.points_before = store.pointCountBefore(run_id, copy.last_step);
            copy.last_before = store.lastPointBefore(run_id, copy.last_step);
            copy.points_at = store.pointCountBefore(run_id, copy.last_step + 1) - copy.points_before;
            for (const RunEvent& event : store.events(run_id)) copy.events_from += event.step >= copy.last_step;
            return copy;
        },
        [this, generation](Copy copy) {
            if (generation != generation_) return;
            // A run read in an earlier session can be shown from the copy while connecting.
            if (copy.has_run && !copy_found_) {
                copy_found_ = true;
                Q_EMIT copyFound();
            }
            launch(copy);
        });
}

void RemoteRunSync::launch(const Copy& copy) {
    endProcess();
    const int generation = ++generation_;
    from_step_ = copy.last_step;
    expected_points_before_ = copy.points_before;
    expected_last_before_ = copy.last_before;
    points_to_skip_ = copy.points_at;
    events_to_skip_ = copy.events_from;
    parser_ = RunStreamParser();
    errors_.clear();
    caught_up_ = false;
    end_received_ = false;

    process_ = new QProcess(this);
    process_->setProgram(RemoteLocation::sshProgram());
    process_->setArguments(location_.sshArguments({QStringLiteral("follow"), run_id_, QStringLiteral("--store"),
                                                   location_.path, QStringLiteral("--from-step"),
                                                   QString::number(from_step_), QStringLiteral("--json")}));
    connect(process_, &QProcess::readyReadStandardOutput, this, [this, generation] {
        if (generation == generation_) readOutput();
    });
    connect(process_, &QProcess::readyReadStandardError, this, [this, generation] {
        if (generation != generation_) return;
        errors_ += process_->readAllStandardError();
        if (errors_.size() > kErrorsKept) errors_ = errors_.right(kErrorsKept);
    });
    connect(process_, &QProcess::finished, this, [this, generation](int exit_code, QProcess::ExitStatus status) {
        if (generation == generation_) onFinished(exit_code, status == QProcess::CrashExit);
    });
    connect(process_, &QProcess::errorOccurred, this, [this, generation](QProcess::ProcessError error) {
        if (generation != generation_ || error != QProcess::FailedToStart) return;
        fail(sshStartFailure(process_->errorString()));
    });
    process_->start(QIODevice::ReadOnly);
}

void RemoteRunSync::readOutput() {
    const QByteArray bytes = process_->readAllStandardOutput();
    std::vector<RunStreamRecord> records;
    try {
        records = parser_.feed(bytes.constData(), static_cast<size_t>(bytes.size()));
    } catch (const RunStreamError& error) {
        // A stream with a bad line cannot be trusted on: nothing more of it goes into the copy.
        fail(tr("the stream of run %1 from %2 cannot be read: %3")
                 .arg(run_id_, location_.hostLabel(), QString::fromStdString(error.what())));
        return;
    }
    take(std::move(records));
}

void RemoteRunSync::take(std::vector<RunStreamRecord> records) {
    Batch batch;
    for (RunStreamRecord& record : records) {
        switch (record.type) {
        case RunStreamRecordType::Header:
            if (record.run_id != run_id_.toStdString() || record.from_step != from_step_)
                return fail(tr("the host answered for run %1 from step %2, not run %3 from step %4")
                                .arg(QString::fromStdString(record.run_id), QString::number(record.from_step), run_id_,
                                     QString::number(from_step_)));
            if (record.points_before != expected_points_before_ ||
                !samePoint(record.last_before, expected_last_before_)) {
                // Written again before the copy's last step (a resume from an earlier
                // checkpoint): the copy is read afresh.
                endProcess();
                const int generation = ++generation_;
                Q_EMIT rewritten();
                cache_->post<bool>(
                    [run_id = run_id_.toStdString()](RunStore& store) {
                        store.removeFromStep(run_id, 0);
                        return true;
                    },
                    [this, generation](bool) {
                        if (generation == generation_) connectFrom();
                    });
                return;
            }
            ++connections_;
            attempts_ = 0;
            next_retry_ms_ = first_retry_ms_;
            setState(State::CatchingUp, tr("reading run %1 from %2 (from step %3)…")
                                            .arg(run_id_, location_.hostLabel())
                                            .arg(from_step_));
            break;
        case RunStreamRecordType::Run:
        case RunStreamRecordType::End:
            // The copy takes the record of the run it asked for, and no other.
            if (record.run.run_id != run_id_.toStdString())
                return fail(tr("the host sent the record of run %1 for run %2")
                                .arg(QString::fromStdString(record.run.run_id), run_id_));
            if (record.type == RunStreamRecordType::Run) {
                batch.run = std::move(record.run);
            } else {
                batch.end = std::move(record.run);
                end_received_ = true;
            }
            break;
        case RunStreamRecordType::Points:
            for (MetricPoint& point : record.points) {
                // The copy's points of its last step are the first of that step in commit order.
                if (point.step == from_step_ && points_to_skip_ > 0) {
                    --points_to_skip_;
                    continue;
                }
                batch.points.push_back(std::move(point));
            }
            break;
        case RunStreamRecordType::Event:
            if (record.event.step >= from_step_ && events_to_skip_ > 0) {
                --events_to_skip_;
                break;
            }
            batch.events.push_back(std::move(record.event));
            break;
        case RunStreamRecordType::Live: batch.live = true; break;
        case RunStreamRecordType::Alive: break;
        }
    }
    if (!batch.empty()) write(std::move(batch));
}

void RemoteRunSync::write(Batch batch) {
    const auto shared = std::make_shared<Batch>(std::move(batch));
    const std::string run_id = run_id_.toStdString();
    cache_->post<bool>(
        [shared, run_id](RunStore& store) {
            const Batch& b = *shared;
            if (b.run) {
                // The run's status is the end record's to bring, after every point: a reader of the
                // copy that saw a finished run before its points had all arrived would stop short.
                RunRecord reading = *b.run;
                reading.status = "running";
                reading.finished.clear();
                store.mirrorRun(reading);
            }
            if (!b.points.empty() || !b.events.empty()) store.commitBatch(run_id, b.points, b.events);
            if (b.end) store.mirrorRun(*b.end);
            return true;
        },
        [this, shared](bool) {
            // Written even after stop(): what arrived is the run's, whoever still watches.
            Q_EMIT committed();
            if (shared->live) {
                caught_up_ = true;
                if (state_ == State::CatchingUp)
                    setState(State::Live, tr("live from %1").arg(location_.hostLabel()));
                Q_EMIT caughtUp();
            }
            if (shared->end) {
                const QString status = QString::fromStdString(shared->end->status);
                setState(State::Ended, tr("run %1 on %2 ended: %3").arg(run_id_, location_.hostLabel(), status));
                Q_EMIT ended(status);
            }
        });
}

void RemoteRunSync::onFinished(int exit_code, bool crashed) {
    if (process_->bytesAvailable() > 0) readOutput();  // the stream's last lines, End among them
    if (!process_) return;                              // which failed the sync
    process_->deleteLater();
    process_ = nullptr;
    if (end_received_ || state_ == State::Failed || state_ == State::Idle) return;
    const QString errors = QString::fromUtf8(errors_);
    if (!crashed) {
        if (const QString why = sshRefusal(location_, exit_code, errors); !why.isEmpty()) return fail(why);
    }
    const QString said = lastErrorLine(errors);
    retryLater(said.isEmpty() ? (crashed ? tr("the connection was cut") : tr("ssh exited with %1").arg(exit_code))
                              : said);
}

void RemoteRunSync::retryLater(const QString& why) {
    ++attempts_;
    const int delay = next_retry_ms_;
    next_retry_ms_ = std::min(next_retry_ms_ * 2, max_retry_ms_);
    // One .arg: `why` is the host's text, whose own %-signs must not be filled in.
    const QString text = connections_ == 0 ? tr("cannot connect to %1 (%2): trying again in %3 s (attempt %4)")
                                           : tr("connection to %1 lost (%2): reconnecting in %3 s (attempt %4)");
    setState(State::Reconnecting, text.arg(location_.hostLabel(), why, QString::number(delay / 1000.0, 'g', 2),
                                           QString::number(attempts_)));
    retry_timer_.start(delay);
}

void RemoteRunSync::fail(const QString& message) {
    ++generation_;
    retry_timer_.stop();
    endProcess();
    setState(State::Failed, message);
}

void RemoteRunSync::endProcess() {
    if (!process_) return;
    QProcess* process = std::exchange(process_, nullptr);
    process->disconnect(this);
    process->kill();
    process->waitForFinished(2000);
    process->deleteLater();
}

void RemoteRunSync::setState(State state, const QString& text) {
    state_ = state;
    state_text_ = text;
    Q_EMIT stateChanged(state, text);
}

}  // namespace trainbench::gui
