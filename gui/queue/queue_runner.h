// QueueRunner: trains the queue's waiting jobs one after another through the window's bridge.
#pragma once

#include <functional>

#include <QObject>
#include <QString>

#include "queue/run_queue.h"

namespace trainbench::gui {

class EngineBridge;
class QueueView;

// The loop: start() takes the next waiting job when no run is live, else when the live one
// ends; each job's end (the bridge's runFinished) is written to the queue, and the next job
// starts once that signal has returned, so a start never nests inside the bridge's signal. A
// job the user stops pauses the queue. How a job becomes the window's run (its config shown,
// the run started) is the shell's business: the runner asks through its JobStarter.
class QueueRunner : public QObject {
    Q_OBJECT

public:
    // Starts `job` as the window's run; false when refused, with the reason in *refusal.
    using JobStarter = std::function<bool(const RunQueue::Job& job, QString* refusal)>;
    // True while something else trains on the same cores (the batch explorer).
    using Busy = std::function<bool()>;

    QueueRunner(QueueView* view, EngineBridge* bridge, JobStarter start_job, Busy busy, QObject* parent = nullptr);

    // Runs the waiting jobs, now when no run is live, else when the live one ends.
    void start();
    // The running job ends as it would; no other starts.
    void stop();
    bool isRunning() const { return running_; }

Q_SIGNALS:
    // A line for the window's event log.
    void logLine(const QString& line);
    // The queue paused itself before a start: why, for the status line.
    void blocked(const QString& reason);

private:
    void runNext();
    void setRunning(bool running);
    void onRunFinished(const trainbench::RunSummary& summary);

    QueueView* view_ = nullptr;
    EngineBridge* bridge_ = nullptr;
    JobStarter start_job_;
    Busy busy_;
    bool running_ = false;
    int row_ = -1;  // the queue's job that is the window's live run, or -1
};

}  // namespace trainbench::gui
