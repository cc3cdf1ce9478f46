// MachineProbeWorker: probeMachine on a std::thread, its result queued to the GUI thread.
#include "batch/machine_probe_worker.h"

#include <exception>
#include <utility>

#include <QMetaObject>

namespace trainbench::gui {

MachineProbeWorker::MachineProbeWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<trainbench::MachineProbe>("trainbench::MachineProbe");
}

MachineProbeWorker::~MachineProbeWorker() { joinThread(); }

bool MachineProbeWorker::start(MachineProbeParams params) {
    if (running_) return false;
    joinThread();  // the previous measurement has reported, so its thread has ended or is about to
    running_ = true;
    thread_ = std::thread([this, params = std::move(params)] {
        auto report = [this](auto emit_signal) {
            QMetaObject::invokeMethod(
                this,
                [this, emit_signal] {
                    running_ = false;
                    joinThread();
                    emit_signal();
                },
                Qt::QueuedConnection);
        };
        // Everything is caught here: an exception leaving a std::thread would end the program.
        try {
            const MachineProbe probe = probeMachine(params.threads, params.copy_bytes, params.directory,
                                                    params.directory_bytes, "runtime.offload_dir");
            report([this, probe] { Q_EMIT measured(probe); });
        } catch (const std::exception& error) {
            const QString message = QString::fromStdString(error.what());
            report([this, message] { Q_EMIT failed(message); });
        } catch (...) {
            report([this] { Q_EMIT failed(tr("the machine probe stopped with an unknown error")); });
        }
    });
    return true;
}

void MachineProbeWorker::joinThread() {
    if (thread_.joinable()) thread_.join();
}

}  // namespace trainbench::gui
