// What type of device a config's ranks run on (a CPU or a GPU), with runtime.device "auto"
// resolved in one place (the planner, the budget, the session and the placement all ask this).
#pragma once

#include "trainbench/run_config.h"

namespace trainbench {

enum class DeviceType { Cpu, Cuda };

// runtime.device's type: "cpu", "cuda", "cuda:i[,j...]"; "auto" is a GPU when CUDA sees one.
DeviceType deviceTypeOf(const RuntimeConfig& runtime);

}  // namespace trainbench

// Floor: memory/ (engine/README.md)
