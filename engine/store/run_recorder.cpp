// RunRecorder: the run's row, its writer thread, and its final status.
#include "trainbench/run_recorder.h"

#include "trainbench/config_io.h"

namespace trainbench {

RunRecorder::RunRecorder(const std::string& store_folder, TrainingSession& session, const std::string& name)
    : run_id_(session.summary().run_id), store_(std::make_unique<RunStore>(store_folder)) {
    RunRecord record;
    record.run_id = run_id_;
    record.name = name;
    record.config_json = runConfigToJson(session.config());
    store_->createRun(record);
    writer_ = std::make_unique<StoreWriter>(store_folder, run_id_, session.bus().subscribe());
}

RunRecorder::RunRecorder(const std::string& store_folder, TrainingSession& session, int64_t from_step)
    : run_id_(session.summary().run_id), store_(std::make_unique<RunStore>(store_folder)) {
    store_->reopenRun(run_id_, from_step, runConfigToJson(session.config()));
    writer_ = std::make_unique<StoreWriter>(store_folder, run_id_, session.bus().subscribe());
}

RunRecorder::~RunRecorder() {
    if (!finished_) writer_.reset();  // the owner vanished: the next open marks it interrupted
}

void RunRecorder::finish(const RunSummary& summary, bool interrupted) {
    if (finished_) return;
    finished_ = true;
    writer_->stop();
    const bool stopped_by_interrupt = interrupted && summary.status == RunStatus::Stopped;
    store_->finishRun(run_id_, stopped_by_interrupt ? "interrupted" : runStatusName(summary.status), summary.steps,
                      summary.final_loss, summary.error, runSummaryToJson(summary));
}

std::string RunRecorder::error() const { return writer_ ? writer_->error() : std::string(); }

}  // namespace trainbench
