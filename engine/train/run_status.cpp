#include "trainbench/run_status.h"

namespace trainbench {

const char* runStatusName(RunStatus status) {
    switch (status) {
        case RunStatus::Created: return "created";
        case RunStatus::Running: return "running";
        case RunStatus::Paused: return "paused";
        case RunStatus::Completed: return "completed";
        case RunStatus::Stopped: return "stopped";
        case RunStatus::Failed: return "failed";
    }
    return "unknown";
}

}  // namespace trainbench
