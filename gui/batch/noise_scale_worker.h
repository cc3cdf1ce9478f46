// NoiseScaleWorker: measures a checkpoint's critical batch on a thread of its own, reporting by Qt signals.
#pragma once

#include <cstdint>

#include <QObject>
#include <QString>

#include "common/background_call.h"
#include "trainbench/run_config.h"
#include "trainbench/weights_io.h"

Q_DECLARE_METATYPE(trainbench::NoiseScaleMeasurement)

namespace trainbench::gui {

// Thread contract as ExplorerWorker's: the worker lives on the GUI thread; start() and the
// destructor are called there and every signal is emitted there. The measurement (one forward
// and backward per validation micro-batch of the checkpoint's weights) cannot be cancelled:
// the destructor waits for it, seconds on the models the workbench trains on the CPU.
class NoiseScaleWorker : public QObject {
    Q_OBJECT

public:
    explicit NoiseScaleWorker(QObject* parent = nullptr);

    // False (and nothing happens) while a measurement runs. `checkpoint`: a checkpoint
    // directory, measured with the config it was trained with (micro-batches of its
    // train.micro_batch_size).
    bool start(const QString& checkpoint, int64_t step);
    bool isRunning() const { return call_.running(); }

Q_SIGNALS:
    void measured(const trainbench::NoiseScaleMeasurement& result, qint64 step);
    void failed(const QString& message);

private:
    BackgroundCall call_{this};
};

}  // namespace trainbench::gui
