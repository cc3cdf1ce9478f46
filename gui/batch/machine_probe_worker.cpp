// MachineProbeWorker: probeMachine on a BackgroundCall, its result queued to the GUI thread.
#include "batch/machine_probe_worker.h"

#include <utility>

namespace trainbench::gui {

MachineProbeWorker::MachineProbeWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<trainbench::MachineProbe>("trainbench::MachineProbe");
}

bool MachineProbeWorker::start(MachineProbeParams params) {
    return call_.start(
        [this, params = std::move(params)]() -> std::function<void()> {
            MachineProbe probe = probeMachine(params.threads, params.copy_bytes, params.directory,
                                              params.directory_bytes, "runtime.offload_dir");
            if (params.collective_ranks > 1) {
                probe.collective_ranks = params.collective_ranks;
                probe.rank_collectives_gbps = probeRankThreadCollectives(params.collective_ranks, params.copy_bytes);
            }
            return [this, probe] { Q_EMIT measured(probe); };
        },
        [this](const QString& message) {
            Q_EMIT failed(message.isEmpty() ? tr("the machine probe stopped with an unknown error") : message);
        });
}

}  // namespace trainbench::gui
