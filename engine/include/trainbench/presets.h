// Built-in presets: configs compiled into the engine, for binaries started outside the source tree.
#pragma once

#include "trainbench/run_config.h"

namespace trainbench {

// configs/tiny.json as it was at build time: trains in seconds on a CPU.
RunConfig builtinTinyConfig();

}  // namespace trainbench

// Floor: config/ (engine/README.md)
