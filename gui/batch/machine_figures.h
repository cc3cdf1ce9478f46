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

// The target section the planner reads, for `target` (config's resolveTarget) of kind here:
// each rate the section leaves 0 and the figures know, filled in as `trainbench-cli probe`
// tells a user to set them: host_memory_gbps the copy rate; on CPU ranks compute_tflops the
// matrix rate with mfu 1 (what a CPU step reaches, docs/BENCHMARKS.md); nvme_read_gbps and
// nvme_write_gbps the directory's when it is runtime.offload_dir. Rates the config sets stay
// its own; another kind is returned unchanged. The config itself never carries the figures:
// they are this machine's, and a config travels.
RunConfig withMachineFigures(RunConfig config, const TargetMachine& target, const MachineProbe& figures);

// Whether measuring would give a field of `unknown` (StepTimePlan::unknown) for `config` planned
// on `target` (this machine): the host copy rate, the CPU's matrix rate on CPU ranks, the
// directory's rates when the config names one (probedDirectory).
bool probeCanFill(const std::vector<std::string>& unknown, const RunConfig& config, const TargetMachine& target);

// The directory a measurement writes through: runtime.offload_dir, or none while the config
// names none or only the planned placeholder (kPlannedOffloadDir).
std::string probedDirectory(const RunConfig& config);

}  // namespace trainbench::gui
