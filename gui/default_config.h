// The built-in tiny preset: what the workbench opens when configs/tiny.json is not at hand.
#pragma once

#include "trainbench/run_config.h"

namespace trainbench::gui {

// Mirrors configs/tiny.json, so a binary started outside the source tree still opens a
// config that trains in seconds on a CPU.
RunConfig builtinTinyConfig();

}  // namespace trainbench::gui
