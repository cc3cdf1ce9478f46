// Where a run stands: what a rank's loop ended with, what a session and the store report.
#pragma once

namespace trainbench {

enum class RunStatus { Created, Running, Paused, Completed, Stopped, Failed };

// The status as the store and the CLI's summary write it ("completed", ...).
const char* runStatusName(RunStatus status);

}  // namespace trainbench

// Floor: train/ (engine/README.md)
