// NoiseScaleWorker: measureNoiseScaleOfCheckpoint on a BackgroundCall, its result queued to the GUI thread.
#include "batch/noise_scale_worker.h"

namespace trainbench::gui {

NoiseScaleWorker::NoiseScaleWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<trainbench::NoiseScaleMeasurement>("trainbench::NoiseScaleMeasurement");
}

bool NoiseScaleWorker::start(const QString& checkpoint, int64_t step) {
    return call_.start(
        [this, path = checkpoint.toStdString(), step]() -> std::function<void()> {
            const NoiseScaleMeasurement result = measureNoiseScaleOfCheckpoint(path, 0);
            return [this, result, step] { Q_EMIT measured(result, step); };
        },
        [this](const QString& message) {
            Q_EMIT failed(message.isEmpty() ? tr("the measurement stopped with an unknown error") : message);
        });
}

}  // namespace trainbench::gui
