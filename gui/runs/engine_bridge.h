// EngineBridge: turns one TrainingSession's bus traffic into batched Qt signals on the GUI thread.
#pragma once

#include <chrono>
#include <memory>

#include <QString>
#include <QTimer>

#include "runs/run_feed.h"
#include "trainbench/metric_bus.h"
#include "trainbench/run_config.h"
#include "trainbench/run_recorder.h"
#include "trainbench/training_session.h"

namespace trainbench::gui {

// Thread contract:
// - The bridge lives on the GUI thread; every public method is called there, and every
//   signal is emitted there (from its drain timer or, for startFailed, inside start()).
// - Rank threads never touch the bridge. They publish to the session's MetricBus; the bridge
//   drains its own subscription every ~33 ms while a run is live (every 250 ms while the run
//   trains on the CPU, see kCpuRunDrainIntervalMs). drain() and the status
//   polls (status(), wait(0 ms)) return at once, so the GUI thread never waits on a rank.
// - One run at a time. The session of a finished run stays alive (its summary stays
//   readable) until the next start() or the bridge's destruction; the session's destructor
//   stops and joins its threads, so destroying the bridge mid-run blocks only until the
//   ranks reach their next micro-batch boundary.
class EngineBridge : public RunFeed {
    Q_OBJECT

public:
    explicit EngineBridge(QObject* parent = nullptr);
    ~EngineBridge() override;

    // Creates and starts a session. Returns false, after emitting startFailed, when a run is
    // still live or the engine refuses the config (invalid fields name their dotted path).
    // The run is recorded in the run store (RunStore::defaultFolder()) under `name`; a store
    // that cannot be opened costs the record, not the run (an event says so).
    bool start(const RunConfig& config, const QString& name = QStringLiteral("workbench"));
    void pause();
    void resume();
    // Asks the ranks to stop at the next micro-batch boundary; runFinished follows.
    void stop();

    // True from a successful start() until runFinished has been emitted.
    bool isLive() const override { return live_; }
    // Created when no session exists yet.
    RunStatus status() const;
    int64_t completedSteps() const override;
    // The origin of the live run's points' wall_time (TrainingSession::startedAt).
    std::chrono::steady_clock::time_point runStartedAt() const {
        return session_ ? session_->startedAt() : std::chrono::steady_clock::time_point{};
    }
    // The store's id of the run started last (empty before the first start).
    const QString& runId() const override { return run_id_; }

    // How often the live run is drained: kDrainIntervalMs, or kCpuRunDrainIntervalMs for a
    // run on the CPU.
    int drainIntervalMs() const { return drain_timer_.interval(); }
    // Another pace for the live run (benchmarks measure the GPU pace on a CPU machine).
    void setDrainIntervalMs(int ms) { drain_timer_.setInterval(ms); }

    static constexpr int kDrainIntervalMs = 33;
    // A run on the CPU has every core busy, so each batch the window takes in (its curves,
    // labels and redraw: ~5-10 ms of the GUI thread at 1280 x 800) slows the ranks, and more
    // than its own time: an intra-op pool waits for its slowest thread. Taken 4 times a
    // second instead of 30, the window costs the run about a tenth as much
    // (docs/BENCHMARKS.md, "What watching costs a run"); on GPUs the GUI thread has a core of
    // its own and keeps the 33 ms.
    static constexpr int kCpuRunDrainIntervalMs = 250;

    // The feed's signals: pointsArrived with every point the bus delivered since the last
    // drain; statusChanged with "failed: reason" for a failure; runFinished with the
    // session's summary.
Q_SIGNALS:
    void startFailed(const QString& message);

private:
    void drainOnce();
    void emitBatch(BusBatch batch);
    void pollStatus();
    QString statusText(RunStatus status) const;

    std::unique_ptr<TrainingSession> session_;
    std::unique_ptr<RunRecorder> recorder_;
    std::shared_ptr<BusSubscription> subscription_;
    QTimer drain_timer_;
    RunStatus last_status_ = RunStatus::Created;
    QString run_id_;
    bool live_ = false;
};

}  // namespace trainbench::gui
