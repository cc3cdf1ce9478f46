// QueueRunner: trains the queue's waiting jobs one after another through the window's bridge.
#include "queue/queue_runner.h"

#include <utility>

#include <QTimer>

#include "queue/queue_view.h"
#include "runs/engine_bridge.h"

namespace trainbench::gui {

QueueRunner::QueueRunner(QueueView* view, EngineBridge* bridge, JobStarter start_job, Busy busy, QObject* parent)
    : QObject(parent), view_(view), bridge_(bridge), start_job_(std::move(start_job)), busy_(std::move(busy)) {
    connect(bridge_, &EngineBridge::runFinished, this, &QueueRunner::onRunFinished);
}

void QueueRunner::start() {
    if (view_->queue()->nextWaiting() < 0) return;
    setRunning(true);
    if (bridge_->isLive()) {
        Q_EMIT logLine(tr("queue: starts when the current run ends"));
        return;
    }
    runNext();
}

void QueueRunner::stop() {
    setRunning(false);
    if (row_ >= 0) Q_EMIT logLine(tr("queue: no run starts after this one"));
}

void QueueRunner::setRunning(bool running) {
    running_ = running;
    view_->setQueueRunning(running);
}

void QueueRunner::onRunFinished(const RunSummary& summary) {
    if (row_ >= 0) {
        view_->queue()->markFinished(row_, summary);
        row_ = -1;
        if (summary.status == RunStatus::Stopped && running_) {
            // The user stopped the queue's run: the rest waits for them.
            setRunning(false);
            Q_EMIT logLine(tr("queue paused: its run was stopped"));
        }
    }
    // A queue started during a run (its own or the user's) goes on once it has ended.
    if (running_) QTimer::singleShot(0, this, &QueueRunner::runNext);
}

void QueueRunner::runNext() {
    if (!running_ || bridge_->isLive()) return;
    RunQueue* queue = view_->queue();
    const int row = queue->nextWaiting();
    if (row < 0) {
        setRunning(false);
        Q_EMIT logLine(tr("queue: every run has ended"));
        return;
    }
    if (busy_()) {
        setRunning(false);
        Q_EMIT blocked(tr("Queue paused: the batch explorer is measuring; start the queue again when it ends."));
        return;
    }
    QString refusal;
    row_ = row;
    const RunQueue::Job job = queue->job(row);  // a copy: starting it shows another config
    if (start_job_(job, &refusal)) {
        queue->markStarted(row, bridge_->runId());
        return;
    }
    queue->markRefused(row, refusal);
    row_ = -1;
    QTimer::singleShot(0, this, &QueueRunner::runNext);
}

}  // namespace trainbench::gui
