// ExplorerWorker: runs the batch explorer on a thread of its own and reports its rows as Qt signals.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include <QObject>
#include <QString>

#include "trainbench/batch_explorer.h"
#include "trainbench/run_config.h"

Q_DECLARE_METATYPE(trainbench::ExploreRow)
Q_DECLARE_METATYPE(trainbench::ExploreResult)

namespace trainbench::gui {

// What one exploration measures: every split m x K of `config`'s global batch.
struct ExploreParams {
    RunConfig config;
    int64_t limit_bytes = 0;  // the per-rank budget when runtime.memory_limit_mb is 0; 0: none
    int64_t steps_per_row = 3;
    double safety_margin = 0.1;
    bool over_layouts = false;  // also every ZeRO stage and recomputation mode (ExploreOptions)
};

// Thread contract:
// - The worker lives on the GUI thread; start(), cancel() and the destructor are called there,
//   and every signal is emitted there. The exploring thread touches nothing of the worker but
//   the cancel flag and queued calls into the GUI thread's event loop.
// - exploreBatchSplits trains one short session per row and looks at the cancel flag only
//   between rows, so cancel() takes effect when the current row ends (seconds on tiny
//   models). The destructor cancels and joins: it blocks for at most that one row.
// - One exploration at a time; finished or failed ends each one, exactly once.
class ExplorerWorker : public QObject {
    Q_OBJECT

public:
    explicit ExplorerWorker(QObject* parent = nullptr);
    ~ExplorerWorker() override;

    // False (and nothing happens) while an exploration is running.
    bool start(ExploreParams params);
    // Ends the exploration after the row being measured; finished then carries the rows so far.
    void cancel();
    // True from a successful start() until finished or failed has been emitted.
    bool isRunning() const { return running_; }

Q_SIGNALS:
    // One measured split, in ascending micro-batch order.
    void rowExplored(const trainbench::ExploreRow& row);
    // The rows and the recommendation; `cancelled` when cancel() cut the exploration short.
    void finished(const trainbench::ExploreResult& result, bool cancelled);
    // The config was refused or the engine threw; no finished follows.
    void failed(const QString& message);

private:
    void joinThread();

    std::thread thread_;
    std::atomic<bool> cancel_requested_{false};
    bool running_ = false;
};

}  // namespace trainbench::gui
