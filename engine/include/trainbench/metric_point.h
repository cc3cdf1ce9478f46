// MetricPoint and RunEvent: the records that flow from rank threads to the store, GUI and CLI.
#pragma once

#include <cstdint>
#include <string>

namespace trainbench {

// One value of one slash-grouped key (`train/loss`) at one optimizer step.
struct MetricPoint {
    int64_t step = 0;     // optimizer step, 1-based
    int64_t tokens = 0;   // cumulative training tokens seen after this step
    double wall_time = 0; // seconds since the run started
    std::string key;
    double value = 0;
};

// Something that happened in a run: status changes, skipped steps, checkpoints, advice.
struct RunEvent {
    int64_t step = 0;
    double wall_time = 0;
    std::string kind;     // the name of an EventKind (trainbench/event_kind.h)
    std::string message;
};

}  // namespace trainbench

// Floor: metrics/ (engine/README.md)
