// EngineBridge: turns one TrainingSession's bus traffic into batched Qt signals on the GUI thread.
#include "runs/engine_bridge.h"

#include <chrono>
#include <exception>
#include <iterator>
#include <utility>

#include "trainbench/event_kind.h"

namespace trainbench::gui {

EngineBridge::EngineBridge(QObject* parent) : RunFeed(parent) {
    // Queued connections (a consumer on another thread) look the types up by name.
    qRegisterMetaType<trainbench::MetricPoint>("trainbench::MetricPoint");
    qRegisterMetaType<trainbench::RunEvent>("trainbench::RunEvent");
    qRegisterMetaType<trainbench::RunSummary>("trainbench::RunSummary");
    qRegisterMetaType<QVector<trainbench::MetricPoint>>("QVector<trainbench::MetricPoint>");

    drain_timer_.setInterval(kDrainIntervalMs);
    drain_timer_.setTimerType(Qt::PreciseTimer);
    connect(&drain_timer_, &QTimer::timeout, this, &EngineBridge::drainOnce);
}

EngineBridge::~EngineBridge() {
    drain_timer_.stop();
    // Ask first so the join in the session's destructor waits one micro-batch, not the run.
    if (session_ && live_) session_->stop();
    subscription_.reset();
    if (session_ && recorder_) {
        session_->wait();
        recorder_->finish(session_->summary());
    }
    recorder_.reset();
    session_.reset();
}

bool EngineBridge::start(const RunConfig& config, const QString& name) {
    if (live_) {
        Q_EMIT startFailed(tr("A run is already in progress; stop it first."));
        return false;
    }
    drain_timer_.stop();
    subscription_.reset();
    recorder_.reset();
    session_.reset();  // the previous run has ended, so this join is immediate
    last_status_ = RunStatus::Created;

    try {
        SessionOptions options;
        options.run_id = generateRunId();
        try {
            options.checkpoint_dir = RunStore(RunStore::defaultFolder()).checkpointFolder(options.run_id);
        } catch (const StoreError&) {
            // No store, no checkpoints: the run itself still goes ahead (reported below).
        }
        session_ = std::make_unique<TrainingSession>(config, options);
        // Subscribe before start(), or the first status event could be published unseen.
        subscription_ = session_->bus().subscribe();
        try {
            recorder_ = std::make_unique<RunRecorder>(RunStore::defaultFolder(), *session_, name.toStdString());
        } catch (const StoreError& error) {
            Q_EMIT eventArrived(RunEvent{0, 0.0, eventKindName(EventKind::Warning), std::string("this run is not recorded: ") + error.what()});
        }
        session_->start();
    } catch (const std::exception& error) {
        subscription_.reset();
        recorder_.reset();
        session_.reset();
        Q_EMIT startFailed(QString::fromStdString(error.what()));
        return false;
    }
    live_ = true;
    run_id_ = QString::fromStdString(session_->summary().run_id);
    drain_timer_.start(session_->trainsOnCpu() ? kCpuRunDrainIntervalMs : kDrainIntervalMs);
    pollStatus();
    return true;
}

void EngineBridge::pause() {
    if (session_ && live_) session_->pause();
}

void EngineBridge::resume() {
    if (session_ && live_) session_->resume();
}

void EngineBridge::stop() {
    if (session_ && live_) session_->stop();
}

RunStatus EngineBridge::status() const {
    return session_ ? session_->status() : RunStatus::Created;
}

int64_t EngineBridge::completedSteps() const {
    return session_ ? session_->completedSteps() : 0;
}

void EngineBridge::drainOnce() {
    if (!session_ || !subscription_) {
        drain_timer_.stop();
        return;
    }
    // Ask whether the run has ended before draining: everything published before the ranks
    // ended is then already in the inbox, so this drain is the run's last.
    const bool ended = session_->wait(std::chrono::milliseconds(0));
    emitBatch(subscription_->drain());
    pollStatus();
    if (!ended) return;

    drain_timer_.stop();
    live_ = false;
    const RunSummary summary = session_->summary();
    if (recorder_) recorder_->finish(summary);
    Q_EMIT runFinished(summary, QString::fromLatin1(runStatusName(summary.status)));
}

void EngineBridge::emitBatch(BusBatch batch) {
    if (!batch.points.empty()) {
        QVector<MetricPoint> points;
        points.reserve(static_cast<qsizetype>(batch.points.size()));
        std::move(batch.points.begin(), batch.points.end(), std::back_inserter(points));
        Q_EMIT pointsArrived(points);
    }
    for (const RunEvent& event : batch.events) Q_EMIT eventArrived(event);
}

void EngineBridge::pollStatus() {
    const RunStatus now = session_->status();
    if (now == last_status_) return;
    last_status_ = now;
    Q_EMIT statusChanged(statusText(now));
}

QString EngineBridge::statusText(RunStatus status) const {
    QString text = QString::fromLatin1(runStatusName(status));
    if (status == RunStatus::Failed) {
        const std::string reason = session_->summary().error;
        if (!reason.empty()) text += QStringLiteral(": ") + QString::fromStdString(reason);
    }
    return text;
}

}  // namespace trainbench::gui
