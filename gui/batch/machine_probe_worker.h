// MachineProbeWorker: measures this machine (probeMachine) on a thread of its own, reporting by Qt signals.
#pragma once

#include <cstdint>
#include <string>

#include <QObject>
#include <QString>

#include "common/background_call.h"
#include "trainbench/machine_probe.h"

Q_DECLARE_METATYPE(trainbench::MachineProbe)

namespace trainbench::gui {

// What one measurement measures, as `trainbench-cli probe` would: `copy_bytes` per copy buffer
// (its --mib, 256 MiB by default), and `directory_bytes` through a scratch file in `directory`
// (empty: no directory).
struct MachineProbeParams {
    int threads = 1;
    int64_t copy_bytes = int64_t(256) << 20;
    std::string directory;
    int64_t directory_bytes = int64_t(256) << 20;
    // CPU rank threads to time the collectives among (the config's world size); below 2: none.
    int collective_ranks = 0;
};

// Thread contract as NoiseScaleWorker's: the worker lives on the GUI thread; start() and the
// destructor are called there and every signal is emitted there. The measurement cannot be
// cancelled: the destructor waits for it (a few seconds: four copies of the buffer, six 1024 x
// 1024 products, the directory's file written and read once).
class MachineProbeWorker : public QObject {
    Q_OBJECT

public:
    explicit MachineProbeWorker(QObject* parent = nullptr);

    // False (and nothing happens) while a measurement runs.
    bool start(MachineProbeParams params);
    bool isRunning() const { return call_.running(); }

Q_SIGNALS:
    void measured(const trainbench::MachineProbe& probe);
    // The engine's message: a directory that cannot take the file names runtime.offload_dir.
    void failed(const QString& message);

private:
    BackgroundCall call_{this};
};

}  // namespace trainbench::gui
