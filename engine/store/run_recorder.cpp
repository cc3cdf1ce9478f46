// RunRecorder: the run's row, its writer thread, and its final status.
#include "trainbench/run_recorder.h"

#include <cstdio>

#include "tensorboard/run_summaries.h"
#include "tensorboard/tensorboard_recorder.h"
#include "trainbench/config_io.h"

namespace trainbench {

namespace {

// The run waits, held, while its store cannot be written, and fails after runtime.store_wait_s:
// a full disk must not cost the points, nor a silent run that records nothing.
StoreHealthHooks holdTheSession(TrainingSession& session, const std::string& store_folder) {
    StoreHealthHooks hooks;
    hooks.unwritable = [&session](const std::string& error) { session.holdForStore(error); };
    hooks.writable = [&session] { session.releaseStoreHold(); };
    const double wait_s = session.config().runtime.store_wait_s;
    hooks.give_up_after = std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
    hooks.give_up = [&session, store_folder, wait_s](const std::string& error) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", wait_s);
        session.abortRun("the run store " + store_folder + " could not be written for " + seconds +
                         " s (runtime.store_wait_s): " + error +
                         "; the points written before are intact; free space or fix permissions, then resume "
                         "from the last checkpoint");
    };
    return hooks;
}

// The folder and file are made before the run's row, so a folder that cannot be made leaves no run behind.
std::unique_ptr<tensorboard::TensorBoardRecorder> openTensorBoard(const TrainingSession& session) {
    const std::string& dir = session.config().runtime.tensorboard_dir;
    if (dir.empty()) return nullptr;
    return std::make_unique<tensorboard::TensorBoardRecorder>(dir, session.summary().run_id);
}

}  // namespace

RunRecorder::RunRecorder(const std::string& store_folder, TrainingSession& session, const std::string& name)
    : run_id_(session.summary().run_id), store_(std::make_unique<RunStore>(store_folder)) {
    tensorboard_ = openTensorBoard(session);
    RunRecord record;
    record.run_id = run_id_;
    record.name = name;
    record.config_json = runConfigToJson(session.config());
    store_->createRun(record);
    if (tensorboard_)
        tensorboard_->start(session.bus(), record.config_json,
                            tensorboard::runStartUnixTime(store_->findRun(run_id_)->created));
    writer_ = std::make_unique<StoreWriter>(store_folder, run_id_, session.bus().subscribe(),
                                            std::chrono::milliseconds(500), holdTheSession(session, store_folder));
}

RunRecorder::RunRecorder(const std::string& store_folder, TrainingSession& session, int64_t from_step)
    : run_id_(session.summary().run_id), store_(std::make_unique<RunStore>(store_folder)) {
    tensorboard_ = openTensorBoard(session);
    store_->reopenRun(run_id_, from_step, runConfigToJson(session.config()));
    if (tensorboard_)
        tensorboard_->start(session.bus(), runConfigToJson(session.config()),
                            tensorboard::runStartUnixTime(store_->findRun(run_id_)->created), from_step);
    writer_ = std::make_unique<StoreWriter>(store_folder, run_id_, session.bus().subscribe(),
                                            std::chrono::milliseconds(500), holdTheSession(session, store_folder));
}

RunRecorder::~RunRecorder() {
    if (!finished_) writer_.reset();  // the owner vanished: the next open marks it interrupted
}

void RunRecorder::finish(const RunSummary& summary, bool interrupted) {
    if (finished_) return;
    finished_ = true;
    writer_->stop();
    if (tensorboard_) tensorboard_->stop();
    const bool stopped_by_interrupt = interrupted && summary.status == RunStatus::Stopped;
    store_->finishRun(run_id_, stopped_by_interrupt ? "interrupted" : runStatusName(summary.status), summary.steps,
                      summary.final_loss, summary.error, runSummaryToJson(summary));
}

std::string RunRecorder::error() const { return writer_ ? writer_->error() : std::string(); }

}  // namespace trainbench
