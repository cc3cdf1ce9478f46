// GenerationWorker: continues prompts with a run's newest checkpoint (generateText) on a thread of its own, reporting by Qt signals.
#include "samples/generation_worker.h"

#include <exception>
#include <utility>

#include <QMetaObject>

#include "trainbench/checkpoints.h"

namespace trainbench::gui {

GenerationWorker::GenerationWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<trainbench::gui::GenerationResult>("trainbench::gui::GenerationResult");
}

GenerationWorker::~GenerationWorker() {
    // Calls the thread queued but the loop has not run yet die with this object, unrun.
    if (thread_.joinable()) thread_.join();
}

bool GenerationWorker::start(GenerationParams params) {
    if (running_) return false;
    if (thread_.joinable()) thread_.join();
    running_ = true;
    thread_ = std::thread([this, params = std::move(params)]() mutable {
        const QString run_id = params.run_id;
        // Everything is caught here: an exception leaving a std::thread would end the program.
        QString error;
        try {
            const CheckpointInfo checkpoint = checkpointOfStep(params.checkpoint_folder.toStdString(), 0);
            params.request.weights = checkpoint.path;
            GenerationResult result;
            result.run_id = run_id;
            result.checkpoint = QString::fromStdString(checkpoint.path);
            result.checkpoint_step = checkpoint.step;
            result.generation = generateText(params.request);
            QMetaObject::invokeMethod(
                this,
                [this, result = std::move(result)] {
                    finish();
                    Q_EMIT generated(result);
                },
                Qt::QueuedConnection);
            return;
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        } catch (...) {
            error = tr("the generation stopped with an unknown error");
        }
        QMetaObject::invokeMethod(
            this,
            [this, run_id, error] {
                finish();
                Q_EMIT failed(run_id, error);
            },
            Qt::QueuedConnection);
    });
    return true;
}

void GenerationWorker::finish() {
    running_ = false;
    // The thread has queued its last call: the join is immediate.
    if (thread_.joinable()) thread_.join();
}

}  // namespace trainbench::gui
