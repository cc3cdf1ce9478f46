// NoiseScaleWorker: measureNoiseScaleOfWeights on a std::thread, results queued to the GUI thread.
#include "batch/noise_scale_worker.h"

#include <exception>

#include <QMetaObject>

namespace trainbench::gui {

NoiseScaleWorker::NoiseScaleWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<trainbench::NoiseScaleMeasurement>("trainbench::NoiseScaleMeasurement");
}

NoiseScaleWorker::~NoiseScaleWorker() { joinThread(); }

bool NoiseScaleWorker::start(const QString& checkpoint, int64_t step) {
    if (running_) return false;
    joinThread();
    running_ = true;
    thread_ = std::thread([this, path = checkpoint.toStdString(), step] {
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
            const NoiseScaleMeasurement result = measureNoiseScaleOfCheckpoint(path, 0);
            report([this, result, step] { Q_EMIT measured(result, step); });
        } catch (const std::exception& error) {
            const QString message = QString::fromStdString(error.what());
            report([this, message] { Q_EMIT failed(message); });
        } catch (...) {
            report([this] { Q_EMIT failed(tr("the measurement stopped with an unknown error")); });
        }
    });
    return true;
}

void NoiseScaleWorker::joinThread() {
    if (thread_.joinable()) thread_.join();
}

}  // namespace trainbench::gui
