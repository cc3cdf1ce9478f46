// ExplorerWorker: runs the batch explorer on a thread of its own and reports its rows as Qt signals.
#include "batch/explorer_worker.h"

#include <exception>
#include <utility>

#include <QMetaObject>

namespace trainbench::gui {

ExplorerWorker::ExplorerWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<trainbench::ExploreRow>("trainbench::ExploreRow");
    qRegisterMetaType<trainbench::ExploreResult>("trainbench::ExploreResult");
}

ExplorerWorker::~ExplorerWorker() {
    // Calls the thread queued but the loop has not run yet die with this object, unrun.
    cancel_requested_ = true;
    joinThread();
}

bool ExplorerWorker::start(ExploreParams params) {
    if (running_) return false;
    joinThread();  // the previous exploration has reported, so its thread has ended or is about to
    cancel_requested_ = false;
    running_ = true;

    thread_ = std::thread([this, params = std::move(params)] {
        ExploreOptions options;
        options.steps_per_row = params.steps_per_row;
        options.safety_margin = params.safety_margin;
        options.over_layouts = params.over_layouts;
        options.cancel = &cancel_requested_;
        options.on_row = [this](const ExploreRow& row) {
            QMetaObject::invokeMethod(this, [this, row] { Q_EMIT rowExplored(row); }, Qt::QueuedConnection);
        };
        // Everything is caught here: an exception leaving a std::thread would end the program.
        try {
            ExploreResult result = exploreBatchSplits(params.config, params.limit_bytes, options);
            const bool cancelled = cancel_requested_.load();
            QMetaObject::invokeMethod(
                this,
                [this, result = std::move(result), cancelled] {
                    running_ = false;
                    joinThread();
                    Q_EMIT finished(result, cancelled);
                },
                Qt::QueuedConnection);
        } catch (const std::exception& error) {
            const QString message = QString::fromStdString(error.what());
            QMetaObject::invokeMethod(
                this,
                [this, message] {
                    running_ = false;
                    joinThread();
                    Q_EMIT failed(message);
                },
                Qt::QueuedConnection);
        } catch (...) {
            QMetaObject::invokeMethod(
                this,
                [this] {
                    running_ = false;
                    joinThread();
                    Q_EMIT failed(tr("the batch explorer stopped with an unknown error"));
                },
                Qt::QueuedConnection);
        }
    });
    return true;
}

void ExplorerWorker::cancel() {
    if (running_) cancel_requested_ = true;
}

void ExplorerWorker::joinThread() {
    if (thread_.joinable()) thread_.join();
}

}  // namespace trainbench::gui
