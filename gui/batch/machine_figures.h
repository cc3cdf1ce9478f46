// MachineFigures: this machine's measured rates (the machine probe's), kept in the settings under its host name, and what they fill in of a target section planned for this machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QString>

#include "trainbench/machine_probe.h"
#include "trainbench/run_config.h"
#include "trainbench/target_machine.h"

namespace trainbench::gui {

// The group of this machine's figures in the workbench's settings (common/workbench_settings.h):
// "machineProbe/<host name>". A home directory shared by a cluster's nodes shares its settings
// too; the host name keeps each machine's figures its own.
QString machineFiguresGroup();

// What was measured here and when. The directory's rates are those of the last directory
// measured: a measurement without one keeps them.
struct MachineFigures {
    MachineProbe probe;
    QString measured_at;  // ISO 8601, UTC
};

// The figures stored for this machine; none when it was never measured (or the values are
// damaged: a rate that is not a positive number counts as not measured).
std::optional<MachineFigures> loadMachineFigures();
// Stores `probe` as this machine's, measured now, and returns what is stored then.
MachineFigures storeMachineFigures(const MachineProbe& probe);

// `config` with the figures in the target section's rates it leaves 0 (withProbedRates: the rule
// `trainbench-cli probe` prints), for `target` (config's resolveTarget) of kind here; another
// kind is returned unchanged. The window's config never carries the figures: they are this
// machine's, and a config travels.
RunConfig withMachineFigures(RunConfig config, const TargetMachine& target, const MachineProbe& figures);

// Whether measuring would give a field of `unknown` (StepTimePlan::unknown) for `config` planned
// on `target` (this machine): the host copy rate, the CPU's matrix rate on CPU ranks, the
// directory's rates when the config names one (probedDirectory).
bool probeCanFill(const std::vector<std::string>& unknown, const RunConfig& config, const TargetMachine& target);

// The directory a measurement writes through: runtime.offload_dir, or none while the config
// names none or only the planned placeholder (kPlannedOffloadDir).
std::string probedDirectory(const RunConfig& config);

}  // namespace trainbench::gui
