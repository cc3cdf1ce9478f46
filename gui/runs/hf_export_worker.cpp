// HfExportWorker: writes a run's newest checkpoint as a Hugging Face directory on a thread of its own, reporting by Qt signals.
#include "runs/hf_export_worker.h"

#include <exception>
#include <utility>

#include <QMetaObject>

namespace trainbench::gui {

HfExportWorker::HfExportWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<trainbench::HfExportSummary>("trainbench::HfExportSummary");
}

HfExportWorker::~HfExportWorker() {
    // Calls the thread queued but the loop has not run yet die with this object, unrun.
    joinThread();
}

bool HfExportWorker::start(HfExportParams params) {
    if (running_) return false;
    joinThread();
    running_ = true;
    thread_ = std::thread([this, params = std::move(params)] {
        const QString run_id = params.run_id;
        // Everything is caught here: an exception leaving a std::thread would end the program.
        try {
            HfExportOptions options;
            options.out_dir = params.out_dir.toStdString();
            options.dtype = params.dtype.toStdString();
            options.expert_layout = params.expert_layout.toStdString();
            options.shard_bytes = parseByteSize(params.shard_size.toStdString(), "shard size");
            const HfExportSummary summary = exportCheckpointToHuggingFace(
                checkpointOfStep(params.checkpoint_folder.toStdString(), 0).path, options);
            QMetaObject::invokeMethod(
                this,
                [this, run_id, summary] {
                    running_ = false;
                    joinThread();
                    Q_EMIT exported(run_id, summary);
                },
                Qt::QueuedConnection);
        } catch (const std::exception& error) {
            const QString message = QString::fromStdString(error.what());
            QMetaObject::invokeMethod(
                this,
                [this, run_id, message] {
                    running_ = false;
                    joinThread();
                    Q_EMIT failed(run_id, message);
                },
                Qt::QueuedConnection);
        } catch (...) {
            QMetaObject::invokeMethod(
                this,
                [this, run_id] {
                    running_ = false;
                    joinThread();
                    Q_EMIT failed(run_id, tr("the export stopped with an unknown error"));
                },
                Qt::QueuedConnection);
        }
    });
    return true;
}

void HfExportWorker::joinThread() {
    if (thread_.joinable()) thread_.join();
}

}  // namespace trainbench::gui
