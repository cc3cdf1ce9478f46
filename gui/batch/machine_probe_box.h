// MachineProbeBox: the batch panel's offer to measure this machine for the step time: a button, a busy bar while the probe runs on its worker, and a line saying what was measured; the figures kept in the settings.
#pragma once

#include <cstdint>
#include <optional>

#include <QString>
#include <QWidget>

#include "batch/machine_figures.h"
#include "trainbench/machine_probe.h"
#include "trainbench/run_config.h"
#include "trainbench/step_time.h"
#include "trainbench/target_machine.h"

class QLabel;
class QProgressBar;
class QPushButton;

namespace trainbench::gui {

class MachineProbeWorker;

// What `trainbench-cli probe` measures (host memory copies, CPU matrix products, and
// runtime.offload_dir's direct writes and reads when the config names one), measured from the
// window: the figures are kept as this machine's (MachineFigures) and the owner plans with them
// (withMachineFigures). The kept figures are read once, when the box is made: the next start
// plans with them without measuring, and the button reads "Measure again".
//
// The box shows while the plan is for this machine (target.kind here) and its step time lacks a
// rate a measurement gives (probeCanFill), and whenever figures are kept, to measure again.
//
// Object names: machineProbeBox, measureMachineButton, machineProbeProgress, machineProbeLabel.
class MachineProbeBox : public QWidget {
    Q_OBJECT

public:
    explicit MachineProbeBox(QWidget* parent = nullptr);
    ~MachineProbeBox() override;

    // This machine's figures, kept or just measured; none before the first measurement.
    const std::optional<MachineFigures>& figures() const { return figures_; }
    // The plan the owner shows: `config` (its runtime.threads and runtime.offload_dir say what a
    // measurement uses), its target and the step time predicted with the figures.
    void setPlan(const RunConfig& config, const TargetMachine& target, const StepTimePlan& time);
    // While a run trains, or the explorer or another measurement runs, the machine is busy and
    // a measurement would measure what is left of it: none starts.
    void setBlocked(bool blocked);
    // Bytes per copy buffer and through the directory (the CLI's --mib; 256 MiB). Tests measure less.
    void setProbeBytes(int64_t bytes) { probe_bytes_ = bytes; }
    // Starts measuring; false when blocked or one runs.
    bool measure();
    bool isMeasuring() const;

Q_SIGNALS:
    // A measurement started (the button's or measure()'s): the owner holds back what would
    // compete for the cores.
    void measuringStarted();
    // A measurement ended: ok, its figures are kept and in figures(); else the engine's message
    // is shown and the figures are as they were.
    void measured(bool ok);

private:
    void onMeasured(const MachineProbe& probe);
    void onFailed(const QString& message);
    void updateControls();

    RunConfig config_;
    bool here_ = false;      // the plan is for this machine
    bool can_fill_ = false;  // its step time lacks a rate a measurement gives
    bool blocked_ = false;
    int64_t probe_bytes_ = int64_t(256) << 20;
    std::optional<MachineFigures> figures_;
    QString error_;  // the last measurement's failure, until the next starts

    QPushButton* button_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* label_ = nullptr;
    MachineProbeWorker* worker_ = nullptr;
};

}  // namespace trainbench::gui
