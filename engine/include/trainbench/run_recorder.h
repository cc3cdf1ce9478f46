// RunRecorder: puts one training session into the run store, from its start to its final status.
#pragma once

#include <memory>
#include <string>

#include "trainbench/run_store.h"
#include "trainbench/store_writer.h"
#include "trainbench/training_session.h"

namespace trainbench {

namespace tensorboard {
class TensorBoardRecorder;
}

// Registers the session's run as `running` and starts the writer thread on its bus; call
// before session.start() so no point is published unseen. While the store cannot be written
// the writer holds the session (see TrainingSession::holdForStore) and, after
// runtime.store_wait_s, fails it. With runtime.tensorboard_dir set, the run's event file is written
// beside the store, live. The session must outlive the recorder. Throws StoreError when the store
// cannot be opened, ConfigError when the TensorBoard folder cannot be made (before anything is written).
class RunRecorder {
public:
    RunRecorder(const std::string& store_folder, TrainingSession& session, const std::string& name);
    // Continues an existing run of the store from a checkpoint at `from_step` (see reopenRun).
    RunRecorder(const std::string& store_folder, TrainingSession& session, int64_t from_step);
    ~RunRecorder();
    // After the session has ended: commits the last points and the final status. A run stopped
    // by an interrupt (Ctrl-C) is recorded as `interrupted`.
    void finish(const RunSummary& summary, bool interrupted = false);
    // The writer's unrecovered error, if any: points held since then did not reach the store.
    std::string error() const;
    const std::string& runId() const { return run_id_; }

private:
    std::string run_id_;
    std::unique_ptr<RunStore> store_;
    std::unique_ptr<StoreWriter> writer_;
    std::unique_ptr<tensorboard::TensorBoardRecorder> tensorboard_;  // null without runtime.tensorboard_dir
    bool finished_ = false;
};

}  // namespace trainbench

// Floor: store/ (engine/README.md)
